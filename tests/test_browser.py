"""``handoffs serve`` in a real browser (the system's Chromium, driven by Playwright).

Skipped when no Chromium is installed (``apt-get install chromium``). Screenshots of each page go to
``$HANDOFFS_ARTIFACTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handoffs_runtime import TeamPolicy, openai_model
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.limits import Limits

from .fake_openai import fake_openai
from .web_support import TOKEN, ServeProcess, served

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and os.path.exists(p)), None
)
playwright_api = pytest.importorskip("playwright.async_api")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")

WAIT_MS = 20_000


@pytest.fixture
async def browser() -> AsyncIterator[object]:
    async with playwright_api.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("HANDOFFS_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def send(page: object, text: str) -> None:
    await page.wait_for_selector("#text:enabled", timeout=WAIT_MS)  # type: ignore[attr-defined]
    await page.fill("#text", text)  # type: ignore[attr-defined]
    await page.click("#send")  # type: ignore[attr-defined]


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
            page = await browser.new_page()  # type: ignore[attr-defined]
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
            await page.get_by_text("Done: your refund is on its way.").wait_for(timeout=WAIT_MS)
            lines = await page.locator(".line").all_text_contents()
            assert "↪ TriageAgent handed the conversation to IssuesAndRepairsAgent" in lines
            assert "⚙ execute_refund done" in lines
            await page.screenshot(path=str(artifacts(tmp_path) / "customer.png"))


async def test_an_operator_takes_a_session_answers_and_hands_it_back(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        customer = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await operator.goto(f"{server.url}/operator#token={TOKEN}")
        await operator.get_by_text("signed in").wait_for(timeout=WAIT_MS)
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
        await customer.get_by_text("↪ HumanAgent handed the conversation to TriageAgent").wait_for(
            timeout=WAIT_MS
        )
        await customer.screenshot(path=str(artifacts(tmp_path) / "customer-after-operator.png"))


async def test_a_reload_resumes_the_session(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "I want a refund for my shoes")
        await page.locator(".msg.agent").first.wait_for(timeout=WAIT_MS)
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        await page.reload()
        await page.locator(".msg.you", has_text="I want a refund for my shoes").wait_for(timeout=WAIT_MS)
        assert await page.evaluate("localStorage.getItem('handoffs.session')") == session
        await send(page, "yes")
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
        await page.locator(".msg.agent").first.wait_for(timeout=WAIT_MS)
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        await server.stop(how)
        await page.locator("#status", has_text="reconnecting").wait_for(timeout=WAIT_MS)
        await server.start()  # a new operator token; the same store
        await page.locator("#status", has_text="reconnected").wait_for(timeout=WAIT_MS)
        await send(page, "yes")
        await page.get_by_text("execute refund → success").wait_for(timeout=WAIT_MS)
        assert await page.evaluate("localStorage.getItem('handoffs.session')") == session
        said = page.locator(".msg.you")  # the history once, then the new message
        assert await said.all_inner_texts() == ["You\nI want a refund for my shoes", "You\nyes"]
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
            await page.locator(".msg.agent").nth(n - 1).wait_for(timeout=WAIT_MS)
        await page.reload()
        await page.locator(".msg.you", has_text="message 3").wait_for(timeout=WAIT_MS)
        assert await page.locator(".msg.you").all_text_contents() == ["You" + "message 3"]
        button = page.get_by_text("Show earlier messages")
        while await button.count():
            shown = await page.locator("#log > *").count()
            await button.dblclick(timeout=WAIT_MS)  # an impatient customer: still one page at a time
            await page.locator("#log > *").nth(shown).wait_for(timeout=WAIT_MS)  # the page arrived
        shown = await page.locator(".msg.you .text").all_text_contents()
        assert shown == ["message 1", "message 2", "message 3"]
        first = await page.locator("#log > *").first.text_content()
        assert first == "You" + "message 1"  # the earliest message at the top, nothing above it
        await send(page, "message 4")  # and the conversation goes on
        await page.locator(".msg.agent").nth(3).wait_for(timeout=WAIT_MS)


async def test_the_stored_sessions_page(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "hello")
        await page.locator(".msg.agent").first.wait_for(timeout=WAIT_MS)
        sessions = await browser.new_page()  # type: ignore[attr-defined]
        await sessions.goto(f"{server.url}/sessions#token={TOKEN}")
        await sessions.locator("#rows tr").first.click(timeout=WAIT_MS)
        await sessions.locator("#log .msg.you", has_text="hello").wait_for(timeout=WAIT_MS)
        await sessions.screenshot(path=str(artifacts(tmp_path) / "sessions.png"))


LEFT = "Please call me back: ann@example.com"
COUNT_CHIMES = """
window.chimes = 0;
const start = OscillatorNode.prototype.start;
OscillatorNode.prototype.start = function (...args) { window.chimes += 1; return start.apply(this, args); };
"""
"""Counts the tones the page starts (the console's chime for a session that starts to wait)."""


async def test_with_no_operator_signed_in_the_customer_hears_so_and_goes_back_to_the_assistant(
    browser: object, tmp_path: Path
) -> None:
    async with served(tmp_path) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "let me talk to a person")
        asked = time.monotonic()
        await page.get_by_text("Nobody can answer you right now.").wait_for(timeout=10_000)
        assert time.monotonic() - asked < 10
        await send(page, LEFT)  # a message and an address, while the wait goes on
        await page.locator(".msg.you", has_text=LEFT).wait_for(timeout=WAIT_MS)
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        stored = [e.text for e in await server.hub.store.entries(session) if e.kind == "user"]
        assert stored == ["let me talk to a person", LEFT]
        await page.screenshot(path=str(artifacts(tmp_path) / "customer-nobody-available.png"))
        await page.click("#wait .back", timeout=WAIT_MS)
        await page.get_by_text("↪ HumanAgent handed the conversation to TriageAgent").wait_for(
            timeout=WAIT_MS
        )
        await page.locator(".msg.agent").first.wait_for(timeout=WAIT_MS)  # an assistant answers
        assert await page.locator("#wait").is_hidden()
        await send(page, "I want a refund for my shoes")  # the assistant is back
        await page.locator(".msg.agent .who", has_text="IssuesAndRepairsAgent").wait_for(timeout=WAIT_MS)


async def test_an_operator_writes_several_times_hands_back_at_any_time_and_sees_who_waits(
    browser: object, tmp_path: Path
) -> None:
    async with served(tmp_path) as server:
        console = await browser.new_context(viewport={"width": 1000, "height": 480})  # type: ignore[attr-defined]
        await console.add_init_script(COUNT_CHIMES)
        operator = await console.new_page()
        await operator.goto(f"{server.url}/operator#token={TOKEN}")
        await operator.get_by_text("signed in").wait_for(timeout=WAIT_MS)
        customer = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await customer.goto(server.url + "/")
        await send(customer, "let me talk to a person")
        await customer.get_by_text("a person will answer you shortly").wait_for(timeout=WAIT_MS)
        await send(customer, "my order A12 never arrived")  # the customer may write while they wait
        waiting = operator.locator("#waiting li.waiting")
        await waiting.locator(".last", has_text="my order A12 never arrived").wait_for(timeout=WAIT_MS)
        await waiting.locator(".waited", has_text=re.compile(r"^waiting \d+ s$")).wait_for(timeout=WAIT_MS)
        assert await operator.title() == "(1) Operator console"
        assert await operator.evaluate("window.chimes") == 1
        await operator.screenshot(path=str(artifacts(tmp_path) / "operator-waiting.png"))
        await waiting.locator(".take").click(timeout=WAIT_MS)
        await operator.locator("#log").get_by_text("my order A12 never arrived").wait_for(timeout=WAIT_MS)
        assert await operator.title() == "Operator console"
        for line in ("Hello, this is Ann.", "Let me look at order A12."):  # two in a row
            await operator.wait_for_selector("#send:enabled", timeout=WAIT_MS)
            await operator.fill("#text", line)
            await operator.click("#send")
            await customer.locator(".msg.agent", has_text=line).wait_for(timeout=WAIT_MS)
        for n in range(6):
            await send(customer, f"detail {n}")
        newest = operator.locator("#log .msg.you", has_text="detail 5")
        await newest.wait_for(timeout=WAIT_MS)
        await playwright_api.expect(newest).to_be_in_viewport()  # not under anything below the log
        assert "/handoff" not in await operator.locator("body").inner_text()
        await operator.screenshot(path=str(artifacts(tmp_path) / "operator-conversation.png"))
        await operator.select_option("#agents", "TriageAgent")
        await operator.click("#handback", timeout=WAIT_MS)  # the customer has the turn: no matter
        await operator.get_by_text("You handed the conversation back to TriageAgent.").wait_for(
            timeout=WAIT_MS
        )
        await customer.get_by_text("↪ HumanAgent handed the conversation to TriageAgent").wait_for(
            timeout=WAIT_MS
        )
        assert await operator.locator("#log .msg.you", has_text="detail 5").is_visible()  # not a blank pane
