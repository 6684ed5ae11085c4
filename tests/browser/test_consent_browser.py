"""The consent screen in a real Chromium, inside a partner's cross-site IFrame."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import BROWSER_TIMEOUT_MS, PASSWORD, Deployment, live_env_for
from tests.conftest import LiveServer

pytestmark = pytest.mark.browser


def sign_in(frame: Any, email: str) -> None:
    frame.get_by_label("Email").fill(email)
    frame.get_by_label("Password").fill(PASSWORD)
    frame.get_by_role("button", name="Sign in and continue").click()


def test_whole_consent_flow_inside_a_partner_iframe(
    page: Any, phone: Any, deployment: Deployment, shots: Path
) -> None:
    # Arranged through the command line, as an operator would.
    partner = deployment.partner("Acme POS", via_cli=True)
    email = deployment.merchant(via_cli=True)  # no profile yet: created on the spot
    token = deployment.integration_token(partner)
    consent_url = deployment.consent_url(partner, token)

    page.goto(deployment.partner_page(consent_url))
    frame = page.frame_locator("iframe")
    frame.get_by_role("heading", name="Connect Acme POS").wait_for()
    page.screenshot(path=shots / "consent-in-partner-iframe.png")
    sign_in(frame, email)

    frame.get_by_role("heading", name="Create your business profile").wait_for()
    frame.get_by_label("Business name").fill("Sunny Cafe")
    frame.get_by_role("button", name="Create profile").click()
    choice = frame.get_by_role("radio", name="A new store in Sunny Cafe")
    choice.wait_for()
    assert choice.is_checked()
    frame.get_by_role("button", name="Allow Acme POS").click()
    frame.get_by_role("heading", name="Acme POS is connected").wait_for()
    page.screenshot(path=shots / "consent-finished-in-iframe.png")

    assert deployment.status(partner, token) == "finished"
    exchanged = httpx.get(
        f"{deployment.url}/v1/auth/integration/token",
        params={**partner.creds, "integration_token": token},
    )
    assert exchanged.status_code == 200, exchanged.text
    access = exchanged.json()["accessToken"]
    settings = httpx.get(
        f"{deployment.url}/v1/stores", headers={"Authorization": f"Bearer {access}"}
    )
    assert settings.status_code == 200 and settings.json()["greenInvoices"] is False


def test_choosing_an_existing_profile_with_the_keyboard_only(
    page: Any, deployment: Deployment
) -> None:
    partner = deployment.partner("Acme POS")
    email = deployment.merchant(profile="Bistro Group")
    token = deployment.integration_token(partner)
    page.goto(deployment.consent_url(partner, token))

    # The email field has focus on arrival; Tab moves on, Enter submits.
    page.wait_for_function("document.activeElement && document.activeElement.name === 'email'")
    page.keyboard.type(email)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.get_by_role("radio", name="A new store in Bistro Group").wait_for()
    # The selected radio is focusable; the submit button follows it in tab order.
    page.get_by_role("radio", name="A new store in Bistro Group").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert "Allow Acme POS" in focused
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Acme POS is connected").wait_for()
    assert deployment.status(partner, token) == "finished"


def test_declining_inside_the_iframe_cancels_the_token(
    page: Any, deployment: Deployment, shots: Path
) -> None:
    partner = deployment.partner("Acme POS")
    email = deployment.merchant(profile="Bistro Group")
    token = deployment.integration_token(partner)
    page.goto(deployment.partner_page(deployment.consent_url(partner, token)))
    frame = page.frame_locator("iframe")
    sign_in(frame, email)
    frame.get_by_role("button", name="Don’t allow").click()
    frame.get_by_role("heading", name="Acme POS was not connected").wait_for()
    page.screenshot(path=shots / "consent-declined-in-iframe.png")
    assert deployment.status(partner, token) == "cancelled"


def test_ereceipt_option_shows_only_for_a_partner_with_ereceipts(
    phone: Any, deployment: Deployment, shots: Path
) -> None:
    plain = deployment.partner("Acme POS")
    receipts = deployment.partner("Green Till", ereceipt=True)
    email = deployment.merchant(profile="Bistro Group")

    phone.goto(deployment.consent_url(plain, deployment.integration_token(plain)))
    sign_in(phone, email)
    phone.get_by_role("radio", name="A new store in Bistro Group").wait_for()
    assert phone.get_by_role("checkbox").count() == 0
    assert "receipt" not in phone.inner_text("main").lower()

    token = deployment.integration_token(receipts)
    phone.goto(deployment.consent_url(receipts, token))
    phone.screenshot(path=shots / "consent-signin-phone.png", full_page=True)
    assert "Text your customers a link to their receipt" in phone.inner_text("main")
    sign_in(phone, email)
    box = phone.get_by_role("checkbox", name="Text customers a link to their receipt")
    box.check()
    phone.screenshot(path=shots / "consent-choose-phone.png", full_page=True)
    phone.get_by_role("button", name="Allow Green Till").click()
    phone.get_by_text("with e-receipts on").wait_for()
    phone.screenshot(path=shots / "consent-finished-phone.png", full_page=True)
    exchanged = httpx.get(
        f"{deployment.url}/v1/auth/integration/token",
        params={**receipts.creds, "integration_token": token},
    )
    assert exchanged.json()["ereceipt"] is True


def test_wrong_password_shows_an_error_in_the_iframe(page: Any, deployment: Deployment) -> None:
    partner = deployment.partner("Acme POS")
    email = deployment.merchant(profile="Bistro Group")
    page.goto(
        deployment.partner_page(
            deployment.consent_url(partner, deployment.integration_token(partner))
        )
    )
    frame = page.frame_locator("iframe")
    frame.get_by_label("Email").fill(email)
    frame.get_by_label("Password").fill("not the password")
    frame.get_by_role("button", name="Sign in and continue").click()
    frame.get_by_role("alert").filter(has_text="Wrong email or password.").wait_for()
    assert frame.get_by_label("Email").input_value() == email


def test_an_origin_the_partner_did_not_register_cannot_frame_the_screen(
    page: Any, deployment: Deployment
) -> None:
    partner = deployment.partner("Other POS", framed=False)
    consent_url = deployment.consent_url(partner, deployment.integration_token(partner))
    # Chromium refuses to render the framed page (frame-ancestors 'none') and says so on
    # the console: waited for, however long a busy machine takes.
    with page.expect_console_message(lambda message: "frame-ancestors" in message.text):
        page.goto(deployment.partner_page(consent_url))
    framed = page.frames[1]
    assert "Connect Other POS" not in framed.content()


@pytest.mark.slow
def test_an_expired_link_shows_an_error_state(
    browser: Any, deployment: Deployment, tmp_path: Path, shots: Path
) -> None:
    env = live_env_for(
        deployment.database_url, tmp_path, PARTNERLINK_INTEGRATION_TOKEN_TTL_SECONDS="1"
    )
    server = LiveServer(env)
    server.start()
    short_lived = Deployment(server, deployment.partner_origin, deployment.database_url)
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    try:
        partner = short_lived.partner("Acme POS")
        token = short_lived.integration_token(partner)
        time.sleep(1.2)
        page = context.new_page()
        response = page.goto(short_lived.consent_url(partner, token))
        assert response.status == 410
        page.get_by_role("heading", name="This link has expired").wait_for()
        assert page.get_by_label("Password").count() == 0
        page.goto(short_lived.partner_page(short_lived.consent_url(partner, token)))
        frame = page.frame_locator("iframe")
        frame.get_by_role("heading", name="This link has expired").wait_for()
        page.screenshot(path=shots / "consent-expired-in-iframe.png")
    finally:
        context.close()
        short_lived.close()
        server.stop()
