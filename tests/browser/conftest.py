"""A real Chromium (Debian's), one per module, driving a real `partnerlink serve`.

Without Chromium the tests are skipped with a hint; with
PARTNERLINK_REQUIRE_BROWSER=1 (CI sets it) a missing Chromium fails the run.
Screenshots go to a temporary folder, or to docs/screenshots/ when
PARTNERLINK_SCREENSHOTS=1 (to refresh the committed ones).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.browser.partner_site import partner_site
from tests.conftest import LiveServer

CHROMIUM = os.environ.get("PARTNERLINK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "correct horse battery"

pytestmark = pytest.mark.browser


def _missing_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -e '.[dev]'"
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return (
            f"Chromium not found at {CHROMIUM}: install it with `apt-get install chromium` "
            "to run the browser tests"
        )
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    problem = _missing_browser()
    if problem:
        if os.environ.get("PARTNERLINK_REQUIRE_BROWSER") == "1":
            pytest.fail(f"PARTNERLINK_REQUIRE_BROWSER=1 but {problem}")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
    )
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def partner_origin() -> Iterator[str]:
    with partner_site() as origin:
        yield origin


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if os.environ.get("PARTNERLINK_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS
    return tmp_path


@dataclass
class Partner:
    client_id: str
    client_secret: str
    name: str

    @property
    def creds(self) -> dict[str, str]:
        return {"client_id": self.client_id, "client_secret": self.client_secret}


class Deployment:
    """The live server plus what a test arranges on it through the CLI and the APIs."""

    def __init__(self, server: LiveServer, partner_origin: str) -> None:
        self.server = server
        self.url = server.url
        self.partner_origin = partner_origin

    def cli_json(self, *args: str) -> Any:
        done = self.server.cli(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def partner(
        self, name: str, pos_type: str, *, ereceipt: bool = False, framed: bool = True
    ) -> Partner:
        args = ["partners", "create", "--name", name, "--pos-type", pos_type]
        args += ["--frame-origin", self.partner_origin] if framed else []
        args += ["--ereceipt"] if ereceipt else []
        out = self.cli_json(*args)
        return Partner(out["clientId"], out["clientSecret"], name)

    def merchant(self, email: str, *, profile: str | None = None) -> None:
        self.cli_json("merchants", "create", "--email", email, "--password", PASSWORD)
        if profile:
            auth = self.merchant_api_auth(email)
            created = httpx.post(
                f"{self.url}/merchant/api/profiles", json={"name": profile}, headers=auth
            )
            assert created.status_code == 200, created.text

    def merchant_api_auth(self, email: str) -> dict[str, str]:
        answer = httpx.post(
            f"{self.url}/merchant/api/sessions", json={"email": email, "password": PASSWORD}
        )
        assert answer.status_code == 200, answer.text
        return {"Authorization": f"Bearer {answer.json()['sessionToken']}"}

    def integration_token(self, partner: Partner) -> str:
        answer = httpx.post(f"{self.url}/v1/auth/integration", params=partner.creds)
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["integrationToken"]
        return token

    def status(self, partner: Partner, token: str) -> str:
        answer = httpx.get(
            f"{self.url}/v1/auth/integration", params={**partner.creds, "integration_token": token}
        )
        assert answer.status_code == 200, answer.text
        status: str = answer.json()["status"]
        return status

    def consent_url(self, partner: Partner, token: str) -> str:
        query = urlencode({"client_id": partner.client_id, "integration_token": token})
        return f"{self.url}/connect/?{query}"

    def partner_page(self, consent_url: str, width: int = 400, height: int = 600) -> str:
        return f"{self.partner_origin}/?{urlencode({'src': consent_url, 'w': width, 'h': height})}"


@pytest.fixture
def deployment(live_server: LiveServer, partner_origin: str) -> Deployment:
    return Deployment(live_server, partner_origin)
