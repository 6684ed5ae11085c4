"""Signed form tokens: the consent screen's only state, and its CSRF guard."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.security.secrets import digest
from partnerlink.settings import Settings
from partnerlink.web.form_tokens import (
    ExpiredFormToken,
    InvalidFormToken,
    issue_form_token,
    read_form_token,
)
from tests.web.conftest import ConsentWorld, new_token, signed_in_consent
from tests.web.pages import assert_html, form, forms, text

KEY = b"k" * 32


def test_a_token_reads_back_its_claims() -> None:
    token = issue_form_token(KEY, purpose="p", ttl_seconds=60, claims={"a": "b"})
    assert read_form_token(KEY, token, purpose="p")["a"] == "b"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),
        lambda t: t.replace("v1.", "v2.", 1),
        lambda t: t.split(".")[0] + "." + t.split(".")[1] + "x." + t.split(".")[2],
        lambda t: "",
        lambda t: "a" * 5000,
        lambda t: t + "é",
        lambda t: "v1.\x00.\x00",
    ],
)
def test_altered_tokens_are_refused(mutate) -> None:  # type: ignore[no-untyped-def]
    token = issue_form_token(KEY, purpose="p", ttl_seconds=60, claims={})
    with pytest.raises(InvalidFormToken):
        read_form_token(KEY, mutate(token), purpose="p")


def test_a_token_is_bound_to_its_purpose_and_key() -> None:
    token = issue_form_token(KEY, purpose="p", ttl_seconds=60, claims={})
    with pytest.raises(InvalidFormToken):
        read_form_token(KEY, token, purpose="q")
    with pytest.raises(InvalidFormToken):
        read_form_token(b"other", token, purpose="p")


def test_an_old_token_is_expired() -> None:
    token = issue_form_token(KEY, purpose="p", ttl_seconds=60, claims={}, now=time.time() - 61)
    with pytest.raises(ExpiredFormToken):
        read_form_token(KEY, token, purpose="p")


def test_a_form_token_of_another_integration_is_refused(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    choose = signed_in_consent(client, consent)
    fields = form(choose, "/connect/approve").fields
    other = new_token(session, consent.partner)
    target = f"profile:{consent.profile.id}"  # type: ignore[union-attr]
    answer = client.post(
        "/connect/approve", data={**fields, "integration_token": other, "target": target}
    )
    assert_html(answer, 403)
    assert not forms(answer.text)


def test_a_token_from_before_sign_in_cannot_approve(
    client: TestClient, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params=consent.link)
    fields = form(page.text, "/connect/signin").fields
    target = f"profile:{consent.profile.id}"  # type: ignore[union-attr]
    answer = client.post("/connect/approve", data={**fields, "target": target})
    assert_html(answer, 403)
    assert "Sign in first" in text(answer.text)


def test_a_forged_merchant_claim_is_refused(
    client: TestClient, consent: ConsentWorld, settings: Settings
) -> None:
    forged = issue_form_token(
        b"not-the-service-key",
        purpose="consent",
        ttl_seconds=600,
        claims={
            "it": digest(consent.token),
            "cid": consent.partner.client_id,
            "mid": consent.merchant.id,
        },
    )
    target = f"profile:{consent.profile.id}"  # type: ignore[union-attr]
    answer = client.post(
        "/connect/approve", data={**consent.link, "form_token": forged, "target": target}
    )
    assert_html(answer, 403)


def test_an_expired_form_asks_to_sign_in_again(
    client: TestClient, consent: ConsentWorld, settings: Settings
) -> None:
    stale = issue_form_token(
        settings.signing_key,
        purpose="consent",
        ttl_seconds=settings.consent_form_ttl_seconds,
        claims={
            "it": digest(consent.token),
            "cid": consent.partner.client_id,
            "mid": consent.merchant.id,
        },
        now=time.time() - settings.consent_form_ttl_seconds - 1,
    )
    target = f"profile:{consent.profile.id}"  # type: ignore[union-attr]
    answer = client.post(
        "/connect/approve", data={**consent.link, "form_token": stale, "target": target}
    )
    assert_html(answer, 400)
    assert "timed out" in text(answer.text)
    assert form(answer.text, "/connect/signin").fields["form_token"] != stale
