"""A real Chromium (Debian's), one per module, driving a real `partnerlink serve`.

Without Chromium the tests are skipped with a hint; with
PARTNERLINK_REQUIRE_BROWSER=1 (CI sets it) a missing Chromium fails the run.
Screenshots go to a temporary folder, or to docs/screenshots/ when
PARTNERLINK_SCREENSHOTS=1 (to refresh the committed ones).
"""

from __future__ import annotations

import itertools
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
from sqlalchemy import select

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.merchant.models import Merchant
from tests.browser.partner_site import partner_site
from tests.conftest import LiveServer
from tests.conftest import _empty_all_tables as empty_all_tables
from tests.factories import create_merchant_account, create_partner, create_profile

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
# How long a page may take to show what a test waits for: a second when idle, far more
# on a busy shared machine.
BROWSER_TIMEOUT_MS = 60_000

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
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
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
    pos_type: str

    @property
    def creds(self) -> dict[str, str]:
        return {"client_id": self.client_id, "client_secret": self.client_secret}


class Deployment:
    """A live server, one per module, and what tests arrange on it.

    Its tables are not emptied between tests (that would cost a server per
    test), so every test draws fresh pos types and emails.
    """

    _drawn = itertools.count(1)  # shared by every deployment of the run

    def __init__(self, server: LiveServer, partner_origin: str, database_url: str) -> None:
        self.server = server
        self.url = server.url
        self.partner_origin = partner_origin
        self.database_url = database_url
        self._engine = make_engine(database_url)
        self._sessions = make_sessionmaker(self._engine)

    def close(self) -> None:
        self._engine.dispose()

    def cli_json(self, *args: str) -> Any:
        done = self.server.cli(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def partner(
        self, name: str, *, ereceipt: bool = False, framed: bool = True, via_cli: bool = False
    ) -> Partner:
        """A partner; through `partnerlink partners create` with via_cli, else straight in the database."""
        pos_type = f"{name.lower().replace(' ', '-')}-{next(self._drawn)}"
        origins = [self.partner_origin] if framed else []
        if via_cli:
            args = ["partners", "create", "--name", name, "--pos-type", pos_type]
            args += [a for origin in origins for a in ("--frame-origin", origin)]
            out = self.cli_json(*args, *(["--ereceipt"] if ereceipt else []))
            return Partner(out["clientId"], out["clientSecret"], name, pos_type)
        with self._sessions() as session:
            made = create_partner(
                session, name=name, pos_type=pos_type, ereceipt=ereceipt, frame_origins=origins
            )
        return Partner(made.client_id, made.client_secret, name, pos_type)

    def merchant(self, *, profile: str | None = None, via_cli: bool = False) -> str:
        """A merchant account (and a profile); returns its email. The password is PASSWORD."""
        email = f"owner-{next(self._drawn)}@example.com"
        if via_cli:
            self.cli_json("merchants", "create", "--email", email, "--password", PASSWORD)
        with self._sessions() as session:
            if not via_cli:
                create_merchant_account(session, email=email, password=PASSWORD)
            if profile:
                merchant = session.scalar(select(Merchant).where(Merchant.email == email))
                assert merchant is not None
                create_profile(session, merchant, name=profile)
        return email

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


def live_env_for(database_url: str, data_dir: Path, **overrides: str) -> dict[str, str]:
    return {
        "PARTNERLINK_DATABASE_URL": database_url,
        "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
        "PARTNERLINK_DATA_DIR": str(data_dir),
        **overrides,
    }


@pytest.fixture(scope="module")
def deployment(
    browser: Any,
    database_url: str,
    partner_origin: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    """Needs `browser` first, so that a missing Chromium skips before a server starts."""
    empty_all_tables(database_url)
    server = LiveServer(live_env_for(database_url, tmp_path_factory.mktemp("live")))
    server.start()
    deployment = Deployment(server, partner_origin, database_url)
    try:
        yield deployment
    finally:
        deployment.close()
        server.stop()
