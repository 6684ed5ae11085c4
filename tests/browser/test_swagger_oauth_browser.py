"""/docs signs in with OAuth 2.0 and PKCE in a real Chromium: Swagger UI's Authorize dialog
opens the consent screen in a popup, the merchant allows, the popup comes back to
/docs/oauth2-redirect (served here, offline, like the rest of /docs), and Swagger UI
exchanges the code and calls a data endpoint with the token."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, Deployment

pytestmark = pytest.mark.browser


def test_swagger_ui_signs_in_with_the_oauth2_scheme_and_calls_the_api(
    page: Any, deployment: Deployment
) -> None:
    redirect_uri = f"{deployment.url}/docs/oauth2-redirect"
    partner = deployment.cli_json(
        "partners", "create", "--name", "Docs POS", "--pos-type", "docs-pos",
        "--redirect-uri", redirect_uri,
    )  # fmt: skip
    email = deployment.merchant(profile="Docs Bistro")
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda request: (
            None if request.url.startswith(deployment.url) else elsewhere.append(request.url)
        ),
    )

    page.goto(f"{deployment.url}/docs")
    page.locator(".auth-wrapper .btn.authorize").click()
    scheme = page.locator(".auth-container", has_text="OAuth2")
    scheme.locator("#client_id_authorizationCode").fill(partner["clientId"])
    scheme.locator("#client_secret_authorizationCode").fill(partner["clientSecret"])
    scheme.locator('label[for="store-authorizationCode-checkbox-OAuth2"]').click()
    with page.expect_popup() as opened:
        scheme.locator("button.authorize").click()
    popup = opened.value
    popup.locator('input[name="email"]').fill(email)
    popup.locator('input[name="password"]').fill(PASSWORD)
    with popup.expect_event("close"):  # the redirect page hands the code back, then closes
        popup.get_by_role("button", name="Sign in and continue").click()
        popup.locator('form[action="/connect/approve"] button[type="submit"]').click()

    scheme.locator("button", has_text="Logout").wait_for()  # signed in: Swagger UI has a token
    page.locator(".modal-ux .btn-done, .modal-ux .close-modal").first.click()

    operation = page.locator(".opblock-get", has=page.locator('[data-path="/v1/stores"]'))
    operation.locator(".opblock-summary").click()
    operation.locator("button.try-out__btn").click()
    operation.locator("button.execute").click()
    status = operation.locator(".live-responses-table .response .response-col_status").first
    status.wait_for()
    assert status.inner_text().strip() == "200"
    assert "greenInvoices" in operation.locator(".live-responses-table").inner_text()
    assert not elsewhere, elsewhere  # nothing from a CDN, nothing from anywhere else
