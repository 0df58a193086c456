"""Issue 35 in the system's Chromium: the customer's page names each argument of the proposal and takes
a correction; the operator console's approval names each argument of the call that will run."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import airline_team
from .browser_support import WAIT_MS, needs_chromium, send
from .test_browser import approve_in_console, sign_in
from .test_first_hour_confirmations import ASKED, CORRECTED, DONE, FIRST
from .web_support import served

pytest.importorskip("playwright.async_api")
pytestmark = needs_chromium


async def test_the_page_and_the_operator_console_name_each_argument(browser: object, tmp_path: Path) -> None:
    airline_team.done.clear()
    async with served(tmp_path, team=airline_team.airline_team()) as server:
        page = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        await send(page, ASKED)
        await page.locator(".msg.agent", has_text=FIRST).wait_for(timeout=WAIT_MS)
        await send(page, "no, the 21st")
        await page.locator(".msg.agent", has_text=CORRECTED).wait_for(timeout=WAIT_MS)
        await send(page, "yes")
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, server.url + "/operator")
        prompt = await approve_in_console(operator)
        assert prompt.startswith('Allow change_flight(booking_ref="SKY456", new_date="21 December")')
        await page.locator(".msg.agent", has_text=DONE).wait_for(timeout=WAIT_MS)
    assert airline_team.done == [("change_flight", {"booking_ref": "SKY456", "new_date": "21 December"})]


async def test_the_operator_sees_what_an_approved_call_did_and_a_session_taken_twice_once(
    browser: object, tmp_path: Path
) -> None:
    airline_team.done.clear()
    async with served(tmp_path, team=airline_team.airline_team()) as server:
        page = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await page.goto(server.url + "/")
        operator = await (await browser.new_context()).new_page()  # type: ignore[attr-defined]
        await sign_in(operator, server.url + "/operator")
        for said, done in (
            ("Please change booking SKY456 to 20 December", "booking SKY456 now flies on 20 December"),
            ("Please cancel booking SKY456", "booking SKY456 cancelled, fare refunded"),
        ):
            await send(page, said)
            await page.locator(".msg.agent", has_text="Shall I go ahead?").last.wait_for(timeout=WAIT_MS)
            await send(page, "yes")
            await approve_in_console(operator)
            outcome = operator.locator("#log .msg", has_text=done)
            await outcome.wait_for(timeout=WAIT_MS)  # what the action did, in the operator's console
        assert await operator.locator("#mine li").count() == 1  # one session, taken twice: listed once
    assert [name for name, _ in airline_team.done] == ["change_flight", "cancel_booking"]
