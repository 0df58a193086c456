"""The page a customer expects, and the operator console, in the system's Chromium.

The team's title, greeting and suggested first questions when the page opens; agents by display name;
a typing indicator while an agent works; the time of every message; yes/no questions as buttons; no
console text; the stored sessions with dates, search and ids that stay on one line. The last test is a
full escalation round trip whose screenshots the README shows.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from handoffs_runtime import OfflineModel
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.operators import APPROVED
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL

from .browser_support import WAIT_MS, artifacts, needs_chromium, send
from .test_browser import approve_in_console, sign_in
from .web_support import TOKEN, served

pytest.importorskip("playwright.async_api")
pytestmark = needs_chromium

TITLE = "ACME Inc. customer service"
AGENT_NAMES = ("TriageAgent", "SalesAgent", "IssuesAndRepairsAgent", "HumanAgent")
CLOCK = re.compile(r"^\d{1,2}:\d{2}( ?[AP]M)?$")
DATED = re.compile(r"\b\d{4}\b.* \d{1,2}:\d{2}( ?[AP]M)?$")


async def page_text(page: object) -> str:
    text: str = await page.locator("body").inner_text()  # type: ignore[attr-defined]
    return text


async def test_the_page_opens_with_title_greeting_and_suggestions(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        assert await page.title() == TITLE
        assert await page.locator("header h1").text_content() == TITLE
        greeting = page.locator(".msg.agent", has_text=acme_team().greeting)
        await greeting.wait_for(timeout=WAIT_MS)
        assert (await greeting.locator(".who").inner_text()).startswith("ACME assistant")
        chips = page.locator("#suggestions .chip")
        assert await chips.all_text_contents() == list(acme_team().suggestions)
        await page.wait_for_selector("#suggestions .chip:enabled", timeout=WAIT_MS)
        await chips.nth(1).click()  # "My rocket skates broke"
        await page.locator(".msg.you", has_text="My rocket skates broke").wait_for(timeout=WAIT_MS)
        assert await page.locator("#suggestions").is_hidden()
        await page.get_by_text("↪ ACME repairs has joined").wait_for(timeout=WAIT_MS)
        reply = page.locator(".msg.agent").nth(1)  # after the greeting
        await reply.wait_for(timeout=WAIT_MS)
        assert (await reply.locator(".who").inner_text()).startswith("ACME repairs")
        stamps = await page.locator(".msg time").all_inner_texts()
        assert len(stamps) == await page.locator(".msg").count() >= 3
        assert all(CLOCK.match(stamp.strip()) for stamp in stamps), stamps
        text = await page_text(page)
        assert not [name for name in AGENT_NAMES if name in text]
        await page.screenshot(path=str(artifacts(tmp_path) / "customer-opening.png"))


async def test_a_typing_indicator_shows_while_an_agent_works(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path, model=OfflineModel(latency=1.5)) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        typing = page.locator("#typing")
        assert await typing.is_hidden()
        await send(page, "I want a refund for my shoes")
        await typing.wait_for(state="visible", timeout=WAIT_MS)
        assert (await typing.inner_text()).startswith("ACME assistant is typing")
        await page.get_by_text("↪ ACME repairs has joined").wait_for(timeout=WAIT_MS)
        assert (await typing.inner_text()).startswith("ACME repairs is typing")
        await page.locator(".msg.agent", has_text="Shall I go ahead?").wait_for(timeout=WAIT_MS)
        await typing.wait_for(state="hidden", timeout=WAIT_MS)


async def test_yes_no_questions_are_buttons(browser: object, tmp_path: Path) -> None:
    """The agent's yes/no question, then the order: the operator approves it in the operator console, and
    the customer confirms their own order with the tool's buttons; the transcript keeps all of it."""
    async with served(tmp_path) as server:
        page = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "buy an anvil for 30 dollars")
        await page.locator(".msg.agent", has_text="Shall I go ahead? (yes/no)").wait_for(timeout=WAIT_MS)
        yes = page.locator("#question button.choice", has_text="Yes")
        await yes.wait_for(
            timeout=WAIT_MS
        )  # the agent's own yes/no question: buttons, and typing still works
        assert await page.locator("#question button.choice").all_text_contents() == ["Yes", "No"]
        assert await page.locator("#text").is_enabled()
        await yes.click()
        # The order itself (irreversible) is the operator's to approve, in the operator console.
        await page.get_by_text(WAITING_FOR_APPROVAL).wait_for(timeout=WAIT_MS)
        assert await page.locator("#question button").count() == 0  # nothing for the customer to approve
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, f"{server.url}/operator")
        assert await approve_in_console(operator) == 'Allow execute_order(product="anvil", price=30)?'
        await operator.locator("#log .line.asked", has_text="Allow execute_order").wait_for(timeout=WAIT_MS)
        await page.get_by_text(APPROVED).wait_for(timeout=WAIT_MS)  # the customer reads the decision
        # Then the tool's own question is the customer's: their order, as buttons, without the "y/n".
        prompt = page.locator("#question .prompt")
        await prompt.wait_for(timeout=WAIT_MS)
        assert await prompt.text_content() == CONFIRM
        assert await page.locator("#question button.choice").all_text_contents() == ["Yes", "No"]
        await page.screenshot(path=str(artifacts(tmp_path) / "customer-yes-no.png"))
        await page.locator("#question button.choice", has_text="Yes").click()
        await page.locator(".msg.agent", has_text="Done: execute order → Success.").wait_for(timeout=WAIT_MS)
        await page.wait_for_selector("#text:enabled", timeout=WAIT_MS)
        assert await conversation(page) == ROUND_TRIP
        assert "y/n" not in await page_text(page)
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        stored = [
            (e.kind, e.body.get("person"), e.body.get("answer"))
            for e in await server.hub.store.entries(session)
        ]
        assert [s for s in stored if s[0] == "question"] == [
            ("question", "operator", "yes"),
            ("question", "customer", "yes"),
        ]
        await page.reload()  # the stored transcript shows the same exchange
        await page.locator(".msg.agent", has_text="Done: execute order").wait_for(timeout=WAIT_MS)
        assert await conversation(page) == ROUND_TRIP


CONFIRM = "Order summary: anvil for $30. Confirm order?"
ROUND_TRIP = [
    "buy an anvil for 30 dollars",
    "↪ ACME sales has joined",
    "I can execute order with product “anvil” and price 30. Shall I go ahead? (yes/no)",
    "yes",
    CONFIRM,
    "yes",
    "Done: execute order → Success.",
]
"""What the customer reads of an order, after the greeting (working and waiting lines aside)."""


async def conversation(page: object) -> list[str]:
    """What was said on the page but the greeting (not stored), with the handoff and question lines."""
    items = page.locator("#log .msg .text, #log .line.handoff, #log .line.asked")  # type: ignore[attr-defined]
    texts: list[str] = await items.all_inner_texts()
    return [text for text in texts if text != acme_team().greeting]


async def test_a_resumed_session_shows_no_console_text(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path, idle_seconds=0.1) as server:
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, "what do you sell?")
        await page.locator(".msg.agent").nth(1).wait_for(timeout=WAIT_MS)
        await send(page, "how much is an anvil?")  # the sales agent's own area: the offline model's answer
        answer = page.locator(".msg.agent").nth(2)
        await answer.wait_for(timeout=WAIT_MS)
        assert "I am the offline demo model" in await answer.inner_text()
        session = await page.evaluate("localStorage.getItem('handoffs.session')")
        await page.goto("about:blank")
        for _ in range(500):  # the page stayed away: the session ends, and is resumed from the store
            if not server.hub.is_live(session):
                break
            await asyncio.sleep(0.02)
        await page.goto(server.url + "/")
        await page.locator(".msg.you", has_text="how much is an anvil?").wait_for(timeout=WAIT_MS)
        await page.wait_for_selector("#text:enabled", timeout=WAIT_MS)
        assert server.hub.is_live(session)
        text = await page_text(page)
        assert "--model" not in text and "›" not in text and "resuming session" not in text, text
        assert await page.locator(".msg.you").count() == 2  # the history once, no retelling


async def test_stored_sessions_have_dates_search_and_readable_ids(browser: object, tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        for first in ("I want a refund for my shoes", "I'd like to buy rocket skates"):
            page = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
            await page.goto(server.url + "/")
            await send(page, first)
            await page.locator(".msg.agent").nth(1).wait_for(timeout=WAIT_MS)
        view = await browser.new_page()  # type: ignore[attr-defined]
        await view.goto(f"{server.url}/sessions")
        await view.fill("#token", TOKEN)
        await view.click("#signin button")
        assert await view.title() == f"Stored sessions · {TITLE}"
        rows = view.locator("#rows tr")
        await rows.nth(1).wait_for(timeout=WAIT_MS)
        headers = await view.locator("thead th").all_text_contents()
        assert headers == ["session", "started", "last message", "with", "status", "messages"]
        cells = await rows.first.locator("td").all_text_contents()
        assert len(cells[0]) == 8 and all(DATED.search(c) for c in cells[1:3]), cells
        assert {cells[3]} <= {"ACME repairs", "ACME sales"}
        id_cell, header = rows.first.locator("td").first, view.locator("thead th").first
        id_box, header_box = await id_cell.bounding_box(), await header.bounding_box()
        assert id_box["height"] < 1.5 * header_box["height"]  # one line, not a character per line
        await view.fill("#search", "sales")
        await view.wait_for_function("document.querySelectorAll('#rows tr').length === 1")
        assert (await rows.first.locator("td").nth(3).text_content()) == "ACME sales"
        await rows.first.click()
        await view.locator("#log .msg.you", has_text="rocket skates").wait_for(timeout=WAIT_MS)
        assert CLOCK.match((await view.locator("#log .msg time").first.inner_text()).strip())
        await view.screenshot(path=str(artifacts(tmp_path) / "sessions.png"))


async def test_an_escalation_round_trip_in_the_team_s_words(browser: object, tmp_path: Path) -> None:
    """The customer asks for a person, an operator takes the session, answers and hands it back; both
    pages name everyone by display name. Its two screenshots are the ones in the README."""
    async with served(tmp_path) as server:
        customer = await (await browser.new_context(viewport={"width": 900, "height": 640})).new_page()  # type: ignore[attr-defined]
        operator = await (await browser.new_context(viewport={"width": 1100, "height": 640})).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, f"{server.url}/operator")
        assert await operator.title() == f"Operator console · {TITLE}"
        options = await operator.locator("#agents option").all_text_contents()
        assert options == ["ACME assistant", "ACME sales", "ACME repairs"]
        await customer.goto(server.url + "/")
        await send(customer, "My rocket skates broke")
        await customer.get_by_text("↪ ACME repairs has joined").wait_for(timeout=WAIT_MS)
        await customer.locator(".msg.agent").nth(1).wait_for(timeout=WAIT_MS)
        await send(customer, "let me talk to a person")
        await customer.get_by_text("↪ ACME operator has joined").wait_for(timeout=WAIT_MS)
        await operator.click("#waiting .take", timeout=WAIT_MS)
        log = operator.locator("#log")
        await log.get_by_text("let me talk to a person").wait_for(timeout=WAIT_MS)
        await log.get_by_text("↪ ACME operator has joined").wait_for(timeout=WAIT_MS)
        await operator.fill("#text", "Hello, this is Ann from ACME. I am sorry about your skates.")
        await operator.click("#send")
        answer = customer.locator(".msg.agent", has_text="Hello, this is Ann from ACME.")
        await answer.wait_for(timeout=WAIT_MS)
        assert (await answer.locator(".who").inner_text()).startswith("ACME operator")
        await send(customer, "Thank you! Can I get them repaired?")
        await log.get_by_text("Can I get them repaired?").wait_for(timeout=WAIT_MS)
        await operator.wait_for_selector("#handback:enabled", timeout=WAIT_MS)
        await operator.select_option("#agents", label="ACME repairs")
        await operator.screenshot(path=str(artifacts(tmp_path) / "escalation-operator.png"))
        seen = await log.inner_text()  # what the operator reads of the conversation
        assert not [name for name in AGENT_NAMES if name in seen], seen
        await operator.click("#handback")
        back = customer.locator(".line.handoff", has_text="↪ ACME repairs has joined")
        await back.nth(1).wait_for(timeout=WAIT_MS)  # the second time: after the skates, and now
        await customer.locator(".msg.agent").nth(3).wait_for(timeout=WAIT_MS)  # repairs answers again
        await customer.wait_for_selector("#text:enabled", timeout=WAIT_MS)
        await customer.screenshot(path=str(artifacts(tmp_path) / "escalation-customer.png"))
        text = await page_text(customer)
        assert not [name for name in AGENT_NAMES if name in text], text
