"""No secret or token reaches the server log (SPEC.md Authentication rule 5, CONTRACT.md §3).

The legacy `?access_token=` is accepted, but the token must never be written to the
log; neither may client secrets, refresh tokens, integration tokens, upload URLs
or receipt keys, wherever in the request line they travel.
"""

from __future__ import annotations

import httpx

from tests.blackbox.box import Box
from tests.blackbox.conftest import Cast


def test_server_log_holds_no_secret_or_token(box: Box, cast: Cast) -> None:
    secrets: list[str] = [cast.plain.client_secret, cast.merchant.session_token]
    partner = cast.plain

    # Consent flow: tokens in query strings and in merchant API paths.
    declined = box.integration_token(partner)
    box.http.get(
        "/merchant/api/consents/" + declined,
        params={"client_id": partner.client_id},
        headers=cast.merchant.auth,
    )
    box.http.get(
        "/connect/", params={"client_id": partner.client_id, "integration_token": declined}
    )
    box.http.post(
        f"/merchant/api/consents/{declined}/decline",
        json={"clientId": partner.client_id},
        headers=cast.merchant.auth,
    )
    conn = box.connect_by_consent(partner, cast.merchant)
    assert conn.refresh_token
    refreshed = box.http.post(
        "/v1/auth/token",
        params={**partner.creds, "code": conn.refresh_token, "grant_type": "refresh_token"},
    ).json()["accessToken"]
    secrets += [declined, conn.access_token, conn.refresh_token, refreshed]

    # Legacy query token, accepted and also refused.
    legacy = {"access_token": conn.access_token}
    assert box.http.get("/v1/stores", params=legacy).status_code == 200
    assert box.http.get("/v1/customers", params=legacy).status_code == 200
    box.http.get("/v1/stores", params={"access_token": conn.access_token + "x"})

    # Pre-signed upload URL (the URL is the credential), used and unused.
    used = box.http.get("/v1/customers", headers=conn.auth).json()["uploadUrl"]
    httpx.put(used, json=[{"email": "log@example.com"}], timeout=30)
    httpx.put(used, json=[], timeout=30)
    secrets.append(used.rsplit("/", 1)[-1])

    # Pairing code and the durable token it yields, then revoked by the partner
    # (POST /v1/auth/revoke carries the token in its query).
    paired = box.connect_by_pairing(cast.plain2, cast.merchant)
    secrets.append(paired.access_token)
    revoked = box.http.post(
        "/v1/auth/revoke", params={**cast.plain2.creds, "token": paired.access_token}
    )
    assert revoked.json() == {"success": True}

    logs = box.server.logs()
    assert "/v1/stores" in logs, "the access log is expected to be on"
    leaked = [s for s in secrets if s and s in logs]
    assert leaked == [], f"{len(leaked)} secrets in the server log"


def test_percent_encoded_parameter_names_keep_their_secrets_out_of_the_log(
    box: Box, cast: Cast
) -> None:
    """The server decodes a parameter's name before reading it (`access%5Ftoken` is
    `access_token`), so the log redacts it whatever its spelling (CONTRACT §12), and the
    legacy token spelled so is announced as deprecated like the plain one."""
    partner = cast.ereceipt
    conn = box.connect_by_consent(partner, cast.merchant)
    assert conn.refresh_token
    for spelling in ("access%5Ftoken", "access%5ftoken", "%61ccess_token", "access%255Ftoken"):
        answer = box.http.get(f"/v1/stores?{spelling}={conn.access_token}")
        if spelling != "access%255Ftoken":  # decoded once, that one names nothing
            assert answer.status_code == 200, (spelling, answer.text)
            assert answer.headers["deprecation"] == "@1767225600"
    refreshed = box.http.post(
        f"/v1/auth/token?client_id={partner.client_id}"
        f"&client%5Fsecret={partner.client_secret}"
        f"&%63ode={conn.refresh_token}&grant%5Ftype=refresh_token"
    )
    assert refreshed.status_code == 200, refreshed.text
    fresh = refreshed.json()["accessToken"]
    box.http.get(f"/v1/stores?ACCESS_TOKEN={fresh}")
    box.http.get(f"/v1/stores?x=1;access_token={fresh}")

    logs = box.server.logs()
    assert "access%5Ftoken=" in logs, "the access log is expected to be on"
    secrets = [conn.access_token, conn.refresh_token, partner.client_secret, fresh]
    leaked = [s for s in secrets if s in logs]
    assert leaked == [], f"{len(leaked)} secrets in the server log"


def test_a_secret_stays_out_of_the_log_under_any_name(box: Box, cast: Cast) -> None:
    """A NUL after a credential's name or a zero-width space before it, and one of our
    secrets under a name of its own (CONTRACT §12): the access log shows none of them."""
    conn = box.connect_by_consent(cast.plain2, cast.merchant)
    token = conn.access_token
    encoded = token.replace("_", "%5F")
    for query in (
        f"access_token%00={token}",
        f"%E2%80%8Baccess_token={token}",
        f"note={token}",
        f"note={encoded}",
    ):
        assert box.http.get(f"/v1/stores?{query}").status_code in (400, 403, 404)
    box.http.get(f"/v1/stores/{token}")  # in the path: 404, and logged so

    logs = box.server.logs()
    assert "%E2%80%8Baccess_token=[REDACTED]" in logs, "the access log is expected to be on"
    assert token not in logs and token[7:] not in logs and encoded not in logs
