"""The SDK's tests run against a real `partnerlink serve` from this repository, on the
suite's test database (SQLite, or PostgreSQL with PARTNERLINK_TEST_DATABASE_URL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import LiveServer, database_url  # noqa: F401  (the suite's database fixture)

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.merchant.accounts import create_merchant
from partnerlink.partners.service import register_partner
from partnerlink.settings import Settings

PASSWORD = "sdk-test-password-1"


@dataclass
class Server:
    live: LiveServer
    sessions: sessionmaker[Session]

    @property
    def url(self) -> str:
        return self.live.url

    def cli(self, *args: str) -> Any:
        done = self.live.cli(*args, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    def partner(self, pos_type: str) -> dict[str, Any]:
        """A partner with e-receipts, registered as `partners create` does (in process: a
        command's start-up would cost seconds a test)."""
        with self.sessions() as session, session.begin():
            registered = register_partner(session, name=pos_type, pos_type=pos_type, ereceipt=True)
            return {
                "clientId": registered.partner.client_id,
                "clientSecret": registered.client_secret,
            }

    def merchant_store(self, email: str, *, receipts: bool) -> tuple[httpx.Client, str]:
        """A merchant (signed in, as an httpx client) with a profile and a manual store."""
        with self.sessions() as session, session.begin():
            create_merchant(session, email=email, password=PASSWORD)
        merchant = httpx.Client(base_url=self.url, timeout=30)
        session = merchant.post(
            "/merchant/api/sessions", json={"email": email, "password": PASSWORD}
        )
        merchant.headers["Authorization"] = f"Bearer {session.json()['sessionToken']}"
        profile = merchant.post("/merchant/api/profiles", json={"name": "SDK Bistro"}).json()
        profile_id = profile["profile"]["id"]
        store = merchant.post(
            f"/merchant/api/profiles/{profile_id}/stores",
            json={"name": "SDK Bistro", "address": "1 Main Street", "countryCode": "US"},
        ).json()["store"]
        if receipts:
            merchant.patch(f"/merchant/api/stores/{store['id']}", json={"greenInvoices": True})
        return merchant, store["id"]

    def pairing_code(self, merchant: httpx.Client, store_id: str, pos_type: str) -> int:
        answer = merchant.post(
            f"/merchant/api/stores/{store_id}/pairing-codes", json={"posType": pos_type}
        )
        assert answer.status_code == 200, answer.text
        code: int = answer.json()["code"]
        return code


@pytest.fixture(scope="module")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:  # noqa: F811
    data = tmp_path_factory.mktemp("sdk-server")
    live = LiveServer(
        {
            "PARTNERLINK_DATABASE_URL": database_url,
            "PARTNERLINK_SECRET_KEY": "sdk-test-secret-key",
            "PARTNERLINK_DATA_DIR": str(data),
            "PARTNERLINK_WORKER_POLL_SECONDS": "0.1",
        }
    )
    live.start()
    engine = make_engine(Settings(database_url=database_url).database_url)
    try:
        yield Server(live, make_sessionmaker(engine))
    finally:
        live.stop()
        engine.dispose()
