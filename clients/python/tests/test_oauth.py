"""The OAuth helpers without a server: PKCE as RFC 7636 computes it, the authorize URL, the
callback's checks, and the token requests as sent (form body, HTTP Basic, no retry of a
code's exchange). tests/test_live_server.py runs them against `partnerlink serve`."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from partnerlink_client import (
    AuthorizationFailed,
    BadRequest,
    PartnerLinkClient,
    RetryPolicy,
    ServerError,
    Unauthorized,
)
from partnerlink_client.oauth import code_challenge, new_code_verifier

FAST = RetryPolicy(attempts=3, base_seconds=0.001, cap_seconds=0.01)


def test_the_s256_challenge_is_rfc_7636s() -> None:
    # RFC 7636 Appendix B's example.
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert code_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    fresh = {new_code_verifier() for _ in range(20)}
    assert len(fresh) == 20 and all(43 <= len(v) <= 128 for v in fresh)


def test_the_authorize_url_carries_a_fresh_verifier_and_state() -> None:
    with PartnerLinkClient("https://api.example.com/", client_id="plk_ci_me") as pl:
        first = pl.oauth.authorize_url("https://pos.example.com/cb")
        second = pl.oauth.authorize_url(
            "https://pos.example.com/cb", connect_url="https://connect.example.com/"
        )
    assert first.url.startswith("https://api.example.com/connect/oauth/authorize?")
    assert second.url.startswith("https://connect.example.com/oauth/authorize?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(first.url).query).items()}
    assert query == {
        "response_type": "code",
        "client_id": "plk_ci_me",
        "redirect_uri": "https://pos.example.com/cb",
        "scope": "store",
        "state": first.state,
        "code_challenge": code_challenge(first.code_verifier),
        "code_challenge_method": "S256",
    }
    assert first.state != second.state and first.code_verifier != second.code_verifier


def test_the_callback_is_checked_before_its_code_is_used() -> None:
    with PartnerLinkClient("https://api.example.com") as pl:
        assert pl.oauth.code_from_callback("https://pos/cb?code=abc&state=s1", "s1") == "abc"
        with pytest.raises(AuthorizationFailed) as forged:
            pl.oauth.code_from_callback("https://pos/cb?code=abc&state=s2", "s1")
        assert forged.value.error == "state_mismatch"
        with pytest.raises(AuthorizationFailed) as denied:
            pl.oauth.code_from_callback("https://pos/cb?error=access_denied&state=s1", "s1")
        assert denied.value.error == "access_denied"


def _client(answers: list[httpx.Response], sent: list[httpx.Request]) -> PartnerLinkClient:
    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answers.pop(0)

    return PartnerLinkClient(
        "https://api.example.com",
        client_id="plk_ci_me",
        client_secret="plk_cs_s3cret",
        policy=FAST,
        http=httpx.Client(transport=httpx.MockTransport(handle)),
        sleep=lambda _seconds: None,
    )


TOKEN = {
    "access_token": "plk_at_new",
    "token_type": "Bearer",
    "expires_in": 3600,
    "refresh_token": "plk_rt_new",
    "storeId": "s1",
}


def test_exchange_sends_a_form_with_basic_authentication_and_keeps_the_tokens() -> None:
    sent: list[httpx.Request] = []
    with _client([httpx.Response(200, json=TOKEN)], sent) as pl:
        tokens = pl.oauth.exchange_code("the-code", "the-verifier", "https://pos/cb")
        assert pl.access_token == "plk_at_new" and pl._state.refresh_token == "plk_rt_new"
    assert (tokens.access_token, tokens.refresh_token, tokens.store_id) == (
        "plk_at_new",
        "plk_rt_new",
        "s1",
    )
    [request] = sent
    assert request.url.path == "/v1/oauth/token"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    expected = base64.b64encode(b"plk_ci_me:plk_cs_s3cret").decode()
    assert request.headers["authorization"] == f"Basic {expected}"
    assert parse_qs(request.content.decode()) == {
        "grant_type": ["authorization_code"],
        "code": ["the-code"],
        "code_verifier": ["the-verifier"],
        "redirect_uri": ["https://pos/cb"],
    }


def test_a_codes_exchange_is_never_retried_but_a_refresh_is() -> None:
    sent: list[httpx.Request] = []
    failing = [httpx.Response(500, json={"code": "internal_error"}) for _ in range(3)]
    with _client(list(failing), sent) as pl, pytest.raises(ServerError):
        pl.oauth.exchange_code("the-code", "v", "https://pos/cb")
    assert len(sent) == 1  # sent again, the code would revoke what the first answer bought
    sent.clear()
    with _client([*failing[:2], httpx.Response(200, json=TOKEN)], sent) as pl:
        assert pl.oauth.refresh("plk_rt_old").access_token == "plk_at_new"
    assert len(sent) == 3
    assert parse_qs(sent[0].content.decode()) == {
        "grant_type": ["refresh_token"],
        "refresh_token": ["plk_rt_old"],
    }


def test_oauth_errors_raise_with_rfc_6749s_word_as_code() -> None:
    grant = {"error": "invalid_grant", "error_description": "used", "code": "invalid_grant"}
    client = {"error": "invalid_client", "code": "invalid_client"}
    sent: list[httpx.Request] = []
    answers = [httpx.Response(400, json=grant), httpx.Response(401, json=client)]
    with _client(answers, sent) as pl:
        with pytest.raises(BadRequest) as refused:
            pl.oauth.refresh("plk_rt_x")
        assert (refused.value.code, refused.value.detail) == ("invalid_grant", "used")
        with pytest.raises(Unauthorized):
            pl.oauth.revoke("plk_at_x", "access_token")
    assert parse_qs(sent[1].content.decode()) == {
        "token": ["plk_at_x"],
        "token_type_hint": ["access_token"],
    }
