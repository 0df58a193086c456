"""``handoffs serve`` in a real browser (the system's Chromium, driven by Playwright).

Skipped when no Chromium is installed (``apt-get install chromium``). Screenshots of each page go to
``$HANDOFFS_ARTIFACTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest

from handoffs_runtime import TeamPolicy, openai_model
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.web.limits import Limits
from handoffs_runtime.web.operators import NOT_APPROVED
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL

from .browser_support import CHROMIUM, WAIT_MS, artifacts, needs_chromium, send
from .fake_openai import fake_openai
from .test_serve_cli import serve
from .web_support import TOKEN, ServeProcess, served

playwright_api = pytest.importorskip("playwright.async_api")
pytestmark = needs_chromium


async def sign_in(page: object, url: str, token: str = TOKEN) -> None:
    """Open the operator console at ``url`` and sign in with its form, as an operator does."""
    await page.goto(url)  # type: ignore[attr-defined]
    await page.fill("#token", token)  # type: ignore[attr-defined]
    await page.click("#signin button")  # type: ignore[attr-defined]
    await page.locator("#status", has_text="signed in").wait_for(timeout=WAIT_MS)  # type: ignore[attr-defined]


async def approve_in_console(operator: object, answer: str = "Approve") -> str:
    """Take the first waiting approval in the operator console and answer it; returns its prompt."""
    await operator.click("#waiting .take", timeout=WAIT_MS)  # type: ignore[attr-defined]
    prompt = operator.locator("#question .prompt")  # type: ignore[attr-defined]
    await prompt.wait_for(timeout=WAIT_MS)
    text: str = await prompt.text_content()
    await operator.click(f"#question button:has-text('{answer}')")  # type: ignore[attr-defined]
    return text


async def test_the_refund_path_with_streamed_text(browser: object, tmp_path: Path) -> None:
    offer = "I am sorry about your shoes. I can refund them: shall I go ahead?"
    answers = [
        [("transfer_to_issues_and_repairs", {})],
        offer,
        [("look_up_item", {"search_query": "shoes"})],
        [("execute_refund", {"item_id": "item_132612938", "reason": "worn out"})],
        "Done: your refund is on its way.",
    ]
    with fake_openai(answers) as model_server:  # type: ignore[arg-type]
        model_server.pause_after = 3
        model = openai_model("gpt-4o-mini", base_url=model_server.url, api_key="k")
        team = acme_team(policy=TeamPolicy(stream=True))
        async with served(tmp_path, team=team, model=model) as server:
            page = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
            operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
            await sign_in(operator, server.url + "/operator")
            await page.goto(server.url + "/")
            await send(page, "I want a refund for my shoes")
            streaming = page.locator(".msg.agent.streaming .text")
            await streaming.wait_for(timeout=WAIT_MS)
            await page.get_by_text(offer[:12]).wait_for(timeout=WAIT_MS)
            assert await streaming.text_content() == offer[:12]  # three deltas, then the pause
            assert model_server.deltas_sent <= 3  # the model is still "writing"
            await page.screenshot(path=str(artifacts(tmp_path) / "customer-streaming.png"))
            model_server.resume.set()
            await page.locator(".msg.agent:not(.streaming)").last.wait_for(timeout=WAIT_MS)
            await send(page, "yes")
            await page.get_by_text(WAITING_FOR_APPROVAL).wait_for(timeout=WAIT_MS)  # a refund is staff's
            assert await approve_in_console(operator) == (
                'Allow execute_refund(item_id="item_132612938", reason="worn out")?'
            )
            await page.get_by_text("Done: your refund is on its way.").wait_for(timeout=WAIT_MS)
            lines = await page.locator(".line").all_text_contents()
            assert "↪ ACME repairs has joined" in lines
            assert "⚙ ACME repairs is working on your request…" in lines
            assert not [line for line in lines if "execute_refund" in line]  # no tool names for customers
            await page.screenshot(path=str(artifacts(tmp_path) / "customer.png"))


async def test_an_operator_takes_a_session_answers_and_hands_it_back(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        customer = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, server.url + "/operator")
        await customer.goto(server.url + "/")
        await send(customer, "let me talk to a person")
        await customer.get_by_text("a person will answer you shortly").wait_for(timeout=WAIT_MS)
        await operator.click("#waiting .take", timeout=WAIT_MS)
        await operator.locator("#log").get_by_text("let me talk to a person").wait_for(timeout=WAIT_MS)
        await operator.wait_for_selector("#text:enabled", timeout=WAIT_MS)
        await operator.fill("#text", "Hello, this is Ann <script>alert(1)</script>")
        await operator.screenshot(path=str(artifacts(tmp_path) / "operator.png"))
        await operator.click("#send")
        reply = customer.locator(".msg.agent", has_text="Hello, this is Ann")
        await reply.wait_for(timeout=WAIT_MS)
        assert await reply.locator(".text").text_content() == "Hello, this is Ann <script>alert(1)</script>"
        await send(customer, "I want a refund for my shoes")
        await operator.locator("#log").get_by_text("I want a refund for my shoes").wait_for(timeout=WAIT_MS)
        await operator.wait_for_selector("#handback:enabled", timeout=WAIT_MS)
        await operator.select_option("#agents", "TriageAgent")
        await operator.click("#handback")
        await customer.get_by_text("↪ ACME assistant has joined").wait_for(timeout=WAIT_MS)
        await customer.screenshot(path=str(artifacts(tmp_path) / "customer-after-operator.png"))


async def test_a_reload_resumes_the_session(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "I want a refund for my shoes")
        await page.locator(".msg.agent").nth(1).wait_for(timeout=WAIT_MS)  # the reply, after the greeting
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        await page.reload()
        await page.locator(".msg.you", has_text="I want a refund for my shoes").wait_for(timeout=WAIT_MS)
        assert await page.evaluate("localStorage.getItem('handoffs.session')") == session
        await send(page, "yes")
        await page.get_by_text(WAITING_FOR_APPROVAL).wait_for(timeout=WAIT_MS)
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, server.url + "/operator")
        await approve_in_console(operator)
        await page.get_by_text("execute refund → success").wait_for(timeout=WAIT_MS)
        assert await page.locator(".msg.you").count() == 2


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["restart", "crash"])
async def test_a_server_restarted_with_default_options_resumes_the_customer(
    browser: object, tmp_path: Path, how: signal.Signals
) -> None:
    """No token file, the default store: the key secret is kept in the store, so the page is still known."""
    server = ServeProcess()
    try:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(await server.start() + "/")
        await send(page, "I want a refund for my shoes")
        await page.locator(".msg.agent").nth(1).wait_for(timeout=WAIT_MS)  # the reply, after the greeting
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        await server.stop(how)
        await page.locator("#status", has_text="reconnecting").wait_for(timeout=WAIT_MS)
        await server.start()  # a new operator token; the same store
        await page.locator("#status", has_text="reconnected").wait_for(timeout=WAIT_MS)
        await send(page, "yes")
        await page.get_by_text(WAITING_FOR_APPROVAL).wait_for(timeout=WAIT_MS)
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, server.url + "/operator", server.token)
        await approve_in_console(operator)
        await page.get_by_text("execute refund → success").wait_for(timeout=WAIT_MS)
        assert await page.evaluate("localStorage.getItem('handoffs.session')") == session
        said = page.locator(".msg.you .text")  # the history once, then the new message
        assert await said.all_inner_texts() == ["I want a refund for my shoes", "yes"]
    finally:
        await server.stop()


async def test_a_long_conversation_shows_its_last_messages_and_earlier_ones_on_request(
    browser: object, tmp_path: Path
) -> None:
    async with served(tmp_path, limits=Limits(history_page=3)) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        for n in range(1, 4):
            await send(page, f"message {n}")
            await page.locator(".msg.agent").nth(n).wait_for(timeout=WAIT_MS)  # after the greeting
        await page.reload()
        await page.locator(".msg.you", has_text="message 3").wait_for(timeout=WAIT_MS)
        assert await page.locator(".msg.you .text").all_text_contents() == ["message 3"]
        button = page.get_by_text("Show earlier messages")
        while await button.count():
            shown = await page.locator("#log > *").count()
            await button.dblclick(timeout=WAIT_MS)  # an impatient customer: still one page at a time
            await page.locator("#log > *").nth(shown).wait_for(timeout=WAIT_MS)  # the page arrived
        shown = await page.locator(".msg.you .text").all_text_contents()
        assert shown == ["message 1", "message 2", "message 3"]
        first = page.locator("#log > *").first
        assert await first.locator(".text").text_content() == "message 1"  # the earliest at the top
        assert await first.get_attribute("class") == "msg you"  # nothing above it
        await send(page, "message 4")  # and the conversation goes on
        await page.locator(".msg.agent").nth(3).wait_for(timeout=WAIT_MS)


async def test_the_stored_sessions_page(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "hello")
        await page.locator(".msg.agent").nth(1).wait_for(timeout=WAIT_MS)  # the reply, after the greeting
        sessions = await browser.new_page()  # type: ignore[attr-defined]
        await sessions.goto(f"{server.url}/sessions")
        await sessions.fill("#token", TOKEN)
        await sessions.click("#signin button")
        await sessions.locator("#rows tr").first.click(timeout=WAIT_MS)
        await sessions.locator("#log .msg.you", has_text="hello").wait_for(timeout=WAIT_MS)
        await sessions.screenshot(path=str(artifacts(tmp_path) / "sessions.png"))


async def test_a_customers_code_runs_only_once_the_operator_approves_it_in_the_console(
    browser: object, tmp_path: Path
) -> None:
    ran = tmp_path / "ran.txt"
    async with served(tmp_path, team=orchestrator_team(), approve_code=True) as server:
        customer = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, server.url + "/operator")
        await customer.goto(server.url + "/")
        await send(customer, f"run this python: open({str(ran)!r}, 'w').write('ran')")
        await customer.get_by_text(WAITING_FOR_APPROVAL).wait_for(timeout=WAIT_MS)
        assert await customer.locator("#question button").count() == 0  # nothing for the customer to approve
        assert await customer.locator("#text").is_disabled()
        await operator.locator("#waiting .kind", has_text="approval").wait_for(timeout=WAIT_MS)
        assert not ran.exists()
        await operator.screenshot(path=str(artifacts(tmp_path) / "operator-approval.png"))
        assert str(ran) in await approve_in_console(operator, "Refuse")
        await customer.get_by_text(NOT_APPROVED).wait_for(timeout=WAIT_MS)  # the decision, then the agent
        await customer.locator(".msg.agent", has_text="did not approve").wait_for(timeout=WAIT_MS)
        assert not ran.exists()
        await send(customer, f"run this python: open({str(ran)!r}, 'w').write('ran')")
        await approve_in_console(operator, "Approve")
        await customer.locator(".msg.agent", has_text="returncode").last.wait_for(timeout=WAIT_MS)
        assert ran.read_text() == "ran"
        await customer.screenshot(path=str(artifacts(tmp_path) / "customer-after-approval.png"))


async def test_the_operator_token_never_reaches_the_browsers_history(tmp_path: Path) -> None:
    """The console is opened as ``handoffs serve`` says, in a browser profile kept on disk."""
    with serve(tmp_path) as (_, lines):
        console = lines[2]
        url = console.split()[2]
        token = console.removesuffix(")").split()[-1]
        assert token not in url and len(token) >= 32
        async with playwright_api.async_playwright() as p:
            profile = tmp_path / "profile"
            context = await p.chromium.launch_persistent_context(
                str(profile), executable_path=CHROMIUM, args=["--no-sandbox"]
            )
            page = context.pages[0] if context.pages else await context.new_page()
            await page.goto(url)
            await page.fill("#token", "not-the-token")
            await page.click("#signin button")
            await page.locator("#status", has_text="wrong operator token").wait_for(timeout=WAIT_MS)
            assert await page.locator("#signin").is_visible()
            await sign_in(page, url, token)
            await page.reload()  # the tab stays signed in
            await page.locator("#status", has_text="signed in").wait_for(timeout=WAIT_MS)
            await page.click("header a")  # the stored sessions, in the same tab
            await page.locator("#status", has_text="sessions").wait_for(timeout=WAIT_MS)
            await context.close()
    history = sqlite3.connect(profile / "Default" / "History")
    try:
        visited = [url for (url,) in history.execute("SELECT url FROM urls")]
    finally:
        history.close()
    assert any(v.endswith("/operator") for v in visited), visited
    assert not [v for v in visited if token in v or "token=" in v]
