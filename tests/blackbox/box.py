"""`Box`: drives one live server from outside (command line and HTTP) and checks problems."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import httpx

from tests.conftest import LiveServer
from tests.waiting import wait_for

PROBLEM_TYPE = "application/problem+json"
PROBLEM_MEMBERS = {"type", "title", "status", "detail", "code", "success"}
PASSWORD = "blackbox horse battery staple"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass
class Partner:
    id: str
    name: str
    pos_type: str
    client_id: str
    client_secret: str
    ereceipt: bool

    @property
    def creds(self) -> dict[str, str]:
        return {"client_id": self.client_id, "client_secret": self.client_secret}


@dataclass
class Merchant:
    id: str
    email: str
    password: str
    session_token: str = ""

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.session_token}"}


@dataclass
class Connected:
    """A store connected to a partner, as the partner sees it."""

    partner: Partner
    merchant: Merchant
    store_id: str
    profile_id: str
    access_token: str
    refresh_token: str | None = None
    exchange: dict[str, Any] = field(default_factory=dict)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.access_token}"}


def assert_problem(
    response: httpx.Response,
    status: int,
    code: str | None = None,
    *,
    secrets: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The CONTRACT §3 body: problem+json, every member, success false, nothing secret."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].split(";")[0].strip() == PROBLEM_TYPE
    body: dict[str, Any] = response.json()
    assert set(body) >= PROBLEM_MEMBERS, body
    assert body["type"] == "about:blank"
    assert body["title"] == HTTPStatus(status).phrase
    assert body["status"] == status
    assert isinstance(body["detail"], str)
    assert isinstance(body["code"], str) and body["code"]
    assert body["success"] is False
    if code is not None:
        assert body["code"] == code, body
    if body["code"] in ("missing_field", "invalid_field"):
        assert isinstance(body.get("errors"), list) and body["errors"], body
        for error in body["errors"]:
            assert {"field", "message"} <= set(error), body
    if status == 429:
        assert int(response.headers["Retry-After"]) >= 1
    text = response.text
    assert "Traceback" not in text
    for secret in secrets:
        if secret:
            assert secret not in text, f"secret echoed in {text}"
    return body


class Box:
    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.url = server.url
        # One client for the whole module, idle between tests for as long as the command
        # line takes: a connection idle near the server's keep-alive timeout (uvicorn's 5 s)
        # can be closed by the server just as a request goes out on it ("Server
        # disconnected without sending a response", seen under load). Idle connections
        # are dropped well before that, as a client should.
        self.http = httpx.Client(
            base_url=server.url, timeout=30, limits=httpx.Limits(keepalive_expiry=2.0)
        )

    def close(self) -> None:
        self.http.close()

    # command line -------------------------------------------------------------

    def cli_json(self, *args: str, cold: bool = False) -> Any:
        """`partnerlink <args> --json`, parsed; `cold`: through a plain `python -m
        partnerlink` process rather than the warm one (test_cli.py's subject)."""
        run = self.server.cold_cli if cold else self.server.cli
        done = run(*args, "--json")
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    def new_partner(self, *, ereceipt: bool = False, name: str | None = None) -> Partner:
        slug = unique("pos")
        args = ["partners", "create", "--name", name or f"Partner {slug}", "--pos-type", slug]
        if ereceipt:
            args.append("--ereceipt")
        out = self.cli_json(*args)
        return Partner(
            id=out["id"],
            name=out["name"],
            pos_type=out["posType"],
            client_id=out["clientId"],
            client_secret=out["clientSecret"],
            ereceipt=out["ereceipt"],
        )

    def new_merchant(self) -> Merchant:
        email = f"{unique('owner')}@example.com"
        out = self.cli_json("merchants", "create", "--email", email, "--password", PASSWORD)
        merchant = Merchant(id=out["id"], email=out["email"], password=PASSWORD)
        merchant.session_token = self.sign_in(email, PASSWORD)
        return merchant

    # merchant API ---------------------------------------------------------------

    def sign_in(self, email: str, password: str) -> str:
        r = self.http.post("/merchant/api/sessions", json={"email": email, "password": password})
        assert r.status_code == 200, r.text
        return str(r.json()["sessionToken"])

    def new_profile(self, merchant: Merchant, name: str | None = None) -> dict[str, Any]:
        r = self.http.post(
            "/merchant/api/profiles",
            json={"name": name or unique("Profile")},
            headers=merchant.auth,
        )
        assert r.status_code == 200, r.text
        return dict(r.json()["profile"])

    def new_manual_store(
        self,
        merchant: Merchant,
        profile_id: str,
        *,
        country: str = "US",
        currency: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": name or unique("Store"),
            "address": "1 Main Street",
            "countryCode": country,
        }
        if currency:
            body["currency"] = currency
        r = self.http.post(
            f"/merchant/api/profiles/{profile_id}/stores", json=body, headers=merchant.auth
        )
        assert r.status_code == 200, r.text
        return dict(r.json()["store"])

    def set_green_invoices(self, merchant: Merchant, store_id: str, on: bool) -> dict[str, Any]:
        r = self.http.patch(
            f"/merchant/api/stores/{store_id}", json={"greenInvoices": on}, headers=merchant.auth
        )
        assert r.status_code == 200, r.text
        return dict(r.json()["store"])

    def reserve_code(self, merchant: Merchant, store_id: str, pos_type: str) -> dict[str, Any]:
        r = self.http.post(
            f"/merchant/api/stores/{store_id}/pairing-codes",
            json={"posType": pos_type},
            headers=merchant.auth,
        )
        assert r.status_code == 200, r.text
        return dict(r.json())

    def connections(self, merchant: Merchant, store_id: str) -> list[dict[str, Any]]:
        r = self.http.get(f"/merchant/api/stores/{store_id}/connections", headers=merchant.auth)
        assert r.status_code == 200, r.text
        return list(r.json()["connections"])

    def store_view(self, merchant: Merchant, store_id: str) -> dict[str, Any]:
        r = self.http.get("/merchant/api/profiles", headers=merchant.auth)
        assert r.status_code == 200, r.text
        for profile in r.json()["profiles"]:
            for store in profile["stores"]:
                if store["id"] == store_id:
                    return dict(store)
        raise AssertionError(f"store {store_id} not in the merchant's profiles")

    # partner API ----------------------------------------------------------------

    def integration_token(self, partner: Partner) -> str:
        r = self.http.post("/v1/auth/integration", params=partner.creds)
        assert r.status_code == 200, r.text
        return str(r.json()["integrationToken"])

    def approve(
        self,
        merchant: Merchant,
        partner: Partner,
        token: str,
        *,
        profile_id: str | None = None,
        store_id: str | None = None,
        green: bool = False,
    ) -> httpx.Response:
        body: dict[str, Any] = {"clientId": partner.client_id, "greenInvoices": green}
        if profile_id:
            body["profileId"] = profile_id
        if store_id:
            body["storeId"] = store_id
        return self.http.post(
            f"/merchant/api/consents/{token}/approve", json=body, headers=merchant.auth
        )

    def connect_by_consent(
        self,
        partner: Partner,
        merchant: Merchant,
        *,
        profile_id: str | None = None,
        store_id: str | None = None,
        green: bool = False,
    ) -> Connected:
        """Runs endpoints 1, the approval and 3; a new profile when no target is named."""
        if profile_id is None and store_id is None:
            profile_id = self.new_profile(merchant)["id"]
        token = self.integration_token(partner)
        approved = self.approve(
            merchant, partner, token, profile_id=profile_id, store_id=store_id, green=green
        )
        assert approved.status_code == 200, approved.text
        target = approved.json()["storeId"]
        r = self.http.get(
            "/v1/auth/integration/token", params={**partner.creds, "integration_token": token}
        )
        assert r.status_code == 200, r.text
        body = r.json()
        owner_profile = profile_id or self.profile_of(merchant, target)
        return Connected(
            partner=partner,
            merchant=merchant,
            store_id=target,
            profile_id=owner_profile,
            access_token=body["accessToken"],
            refresh_token=body["refreshToken"],
            exchange=body,
        )

    def connect_by_pairing(
        self, partner: Partner, merchant: Merchant, *, store_id: str | None = None
    ) -> Connected:
        """Reserves a code in the merchant API and redeems it (endpoint 5)."""
        if store_id is None:
            profile_id = self.new_profile(merchant)["id"]
            store_id = self.new_manual_store(merchant, profile_id)["id"]
        else:
            profile_id = self.profile_of(merchant, store_id)
        code = self.reserve_code(merchant, store_id, partner.pos_type)["code"]
        r = self.http.post("/v1/auth/integration/pair", json={"code": code})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["storeId"] == store_id
        return Connected(
            partner=partner,
            merchant=merchant,
            store_id=store_id,
            profile_id=profile_id,
            access_token=body["access_token"],
            exchange=body,
        )

    def profile_stores(self, merchant: Merchant, profile_id: str) -> list[dict[str, Any]]:
        r = self.http.get("/merchant/api/profiles", headers=merchant.auth)
        assert r.status_code == 200, r.text
        for profile in r.json()["profiles"]:
            if profile["id"] == profile_id:
                return list(profile["stores"])
        raise AssertionError(f"profile {profile_id} not among the merchant's profiles")

    def profile_of(self, merchant: Merchant, store_id: str) -> str:
        r = self.http.get("/merchant/api/profiles", headers=merchant.auth)
        for profile in r.json()["profiles"]:
            if any(s["id"] == store_id for s in profile["stores"]):
                return str(profile["id"])
        raise AssertionError(f"store {store_id} not in the merchant's profiles")

    # waiting for the background worker -----------------------------------------

    def wait_for(self, check: Any, timeout: float = 120.0, interval: float = 0.1) -> Any:
        return wait_for(check, timeout, "the background worker", interval)

    def wait_upload(
        self, conn: Connected, upload_id: str, timeout: float = 300.0
    ) -> dict[str, Any]:
        last: dict[str, Any] = {}

        def done() -> dict[str, Any] | None:
            r = self.http.get(f"/v1/customers/uploads/{upload_id}", headers=conn.auth)
            assert r.status_code == 200, r.text
            last.update(r.json())
            return dict(last) if last["status"] in ("done", "failed") else None

        try:
            return dict(self.wait_for(done, timeout))
        except AssertionError as error:
            tail = "\n".join(self.server.logs().splitlines()[-40:])
            raise AssertionError(
                f"upload not finished: {last}\n--- server log ---\n{tail}"
            ) from error

    def sms_link(self, order_id: str) -> str:
        """Waits for the e-receipt of `order_id` in `sms list` and answers its link."""

        def link() -> str | None:
            for message in self.cli_json("sms", "list", "--limit", "50"):
                if message["orderId"] == order_id:
                    return str(message["link"])
            return None

        return str(self.wait_for(link, timeout=120, interval=1))

    def upload_customers(self, conn: Connected, records: Any) -> dict[str, Any]:
        """Endpoint 8, then the PUT; answers the finished upload status."""
        r = self.http.get("/v1/customers", headers=conn.auth)
        assert r.status_code == 200, r.text
        put = httpx.put(r.json()["uploadUrl"], json=records, timeout=30)
        assert put.status_code == 200, put.text
        return self.wait_upload(conn, put.json()["uploadId"])

    def customers(self, merchant: Merchant, profile_id: str) -> dict[str, Any]:
        r = self.http.get(
            f"/merchant/api/profiles/{profile_id}/customers",
            params={"limit": 1000},
            headers=merchant.auth,
        )
        assert r.status_code == 200, r.text
        return dict(r.json())
