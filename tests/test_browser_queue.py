"""Waiting for a person in a real browser (the system's Chromium): the customer's page and the console.

With nobody signed in the customer hears so within 10 s and can go back to the assistant; an operator
sees who waits, for how long and their last words (with a chime and a count in the title bar), writes
several times in a row and hands the conversation back while the customer has the turn.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .browser_support import WAIT_MS, artifacts, needs_chromium, send
from .test_browser import sign_in
from .web_support import served

playwright_api = pytest.importorskip("playwright.async_api")
pytestmark = needs_chromium

LEFT = "Please call me back: ann@example.com"
BACK = "↪ ACME assistant has joined"
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
        replies = await page.locator(".msg.agent").count()  # the greeting
        await page.click("#wait .back", timeout=WAIT_MS)
        await page.get_by_text(BACK).wait_for(timeout=WAIT_MS)
        await page.locator(".msg.agent").nth(replies).wait_for(timeout=WAIT_MS)  # the assistant answers
        assert await page.locator("#wait").is_hidden()
        await send(page, "I want a refund for my shoes")  # and goes on with the customer
        await page.locator(".msg.agent .who", has_text="ACME repairs").wait_for(timeout=WAIT_MS)


async def test_an_operator_writes_several_times_hands_back_at_any_time_and_sees_who_waits(
    browser: object, tmp_path: Path
) -> None:
    async with served(tmp_path) as server:
        console = await browser.new_context(viewport={"width": 1000, "height": 480})  # type: ignore[attr-defined]
        await console.add_init_script(COUNT_CHIMES)
        operator = await console.new_page()
        await sign_in(operator, server.url + "/operator")
        customer = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await customer.goto(server.url + "/")
        await send(customer, "let me talk to a person")
        await customer.get_by_text("a person will answer you shortly").wait_for(timeout=WAIT_MS)
        await send(customer, "my order A12 never arrived")  # the customer may write while they wait
        waiting = operator.locator("#waiting li.waiting")
        await waiting.locator(".last", has_text="my order A12 never arrived").wait_for(timeout=WAIT_MS)
        await waiting.locator(".waited", has_text=re.compile(r"^waiting \d+ s$")).wait_for(timeout=WAIT_MS)
        assert (await operator.title()).startswith("(1) Operator console")
        assert await operator.evaluate("window.chimes") == 1
        await operator.screenshot(path=str(artifacts(tmp_path) / "operator-waiting.png"))
        await waiting.locator(".take").click(timeout=WAIT_MS)
        await operator.locator("#log").get_by_text("my order A12 never arrived").wait_for(timeout=WAIT_MS)
        assert (await operator.title()).startswith("Operator console")
        for line in ("Hello, this is Ann.", "Let me look at order A12."):  # two in a row
            await operator.wait_for_selector("#send:enabled", timeout=WAIT_MS)
            await operator.fill("#text", line)
            await operator.click("#send")
            await customer.locator(".msg.agent", has_text=line).wait_for(timeout=WAIT_MS)
            await operator.locator("#log .msg.agent", has_text=line).wait_for(
                timeout=WAIT_MS
            )  # as they read it
        for n in range(6):
            await send(customer, f"detail {n}")
        newest = operator.locator("#log .msg.you", has_text="detail 5")
        await newest.wait_for(timeout=WAIT_MS)
        await playwright_api.expect(newest).to_be_in_viewport()  # not under anything below the log
        assert "/handoff" not in await operator.locator("body").inner_text()
        await operator.screenshot(path=str(artifacts(tmp_path) / "operator-conversation.png"))
        await operator.select_option("#agents", "TriageAgent")
        await operator.click("#handback", timeout=WAIT_MS)  # the customer has the turn: no matter
        await operator.get_by_text("You handed the conversation back to ACME assistant.").wait_for(
            timeout=WAIT_MS
        )
        await customer.get_by_text(BACK).wait_for(timeout=WAIT_MS)
        assert await operator.locator("#log .msg.you", has_text="detail 5").is_visible()  # not a blank pane
