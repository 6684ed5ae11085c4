"""GET .../audiences/{segment}/export: Meta and Google customer-list files (CONTRACT.md §8)."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.audiences import hashing, service
from partnerlink.audiences.choices import opt_out_phone
from tests.audiences.helpers import add_customer, add_order
from tests.factories import ConnectedStoreFixture, create_merchant_account, create_profile

# Meta's published examples, "Customer Information Parameters" of the Conversions API
# (the same normalization and hashing as Custom Audiences files):
# https://developers.facebook.com/docs/marketing-api/conversions-api/parameters/customer-information-parameters
META_EMAIL_SHA256 = (
    "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f"  # john_smith@gmail.com
)
META_PHONE_SHA256 = (
    "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176"  # 16505551212
)
META_FN_SHA256 = "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec"  # mary
META_COUNTRY_SHA256 = "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621"  # us
# Google Customer Match, "Formatting guidelines for uploading hashed data"
# (https://support.google.com/google-ads/answer/7476159) and the Google Ads API's
# Customer Match normalization: email trimmed and lower-cased (the same digest as Meta's
# example above), phone in E.164 with its `+` (their example: +12125650000); Country and
# Zip not hashed. Google publishes the rule, not a digest, for the phone: compared with
# hashlib independently below.
GOOGLE_PHONE_E164 = "+12125650000"


def _export(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], segment: str, fmt: str
) -> list[list[str]]:
    response = client.get(
        f"/merchant/api/profiles/{shop.profile.id}/audiences/{segment}/export",
        params={"format": fmt},
        headers=owner,
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"].startswith("attachment;")
    return list(csv.reader(io.StringIO(response.text)))


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_meta_file_matches_metas_published_hashes(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(
        session,
        shop.store,
        email="john_smith@gmail.com",
        phone="+16505551212",
        first_name=" Mary ",
        last_name="Smith",
        city="Menlo Park",
        country_code="US",
    )
    rows = _export(client, shop, owner, "all", "meta")
    assert rows[0] == ["email", "phone", "fn", "ln", "ct", "country"]
    assert rows[1] == [
        META_EMAIL_SHA256,
        META_PHONE_SHA256,
        META_FN_SHA256,
        _sha("smith"),
        _sha("menlopark"),
        META_COUNTRY_SHA256,
    ]
    assert len(rows) == 2


def test_google_file_normalizes_and_hashes_by_googles_rules(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(
        session,
        shop.store,
        email="john_smith@gmail.com",
        phone=GOOGLE_PHONE_E164,
        first_name="Mary",
        last_name="Smith",
        country_code="US",
    )
    add_customer(session, shop.store, phone="+14155550100", country_code=None)
    add_customer(session, shop.store, first_name="No", last_name="Identifier")  # left out
    rows = _export(client, shop, owner, "all", "google")
    assert rows[0] == ["Email", "Phone", "First Name", "Last Name", "Country", "Zip"]
    assert rows[1] == [
        META_EMAIL_SHA256,
        hashlib.sha256(b"+12125650000").hexdigest(),
        _sha("mary"),
        _sha("smith"),
        "US",
        "",
    ]
    assert rows[2] == ["", _sha("+14155550100"), "", "", "", ""]
    assert len(rows) == 3


def test_normalization_helpers_follow_each_platform() -> None:
    assert hashing.meta_phone("+44 844 412 4653") == "448444124653"
    assert hashing.google_phone("+16505551212") == "+16505551212"
    assert hashing.meta_city(" New  York ") == "newyork"
    assert hashing.normalized_email("  John_Smith@Gmail.com ") == "john_smith@gmail.com"
    assert hashing.sha256_hex("john_smith@gmail.com") == META_EMAIL_SHA256


def test_segment_export_streams_in_chunks_and_leaves_out_opted_out(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(service, "EXPORT_CHUNK", 3)
    for i in range(11):
        customer = add_customer(session, shop.store, phone=f"+1415555{i:04d}")
        add_order(session, shop.store, customer, days_ago=2, price=100 + i)
    opt_out_phone(session, "+14155550010")  # the biggest spender
    session.commit()
    all_rows = _export(client, shop, owner, "all", "google")
    assert [r[1] for r in all_rows[1:]] == [_sha(f"+1415555{i:04d}") for i in range(10)]
    top = _export(client, shop, owner, "top", "google")
    # ceil(10 / 5) = 2 of the 10 buyers left: the two biggest spenders still in.
    assert [r[1] for r in top[1:]] == [_sha("+14155550008"), _sha("+14155550009")]


def test_bad_requests_answer_problem_bodies(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    base = f"/merchant/api/profiles/{shop.profile.id}/audiences"
    cases = [
        (f"{base}/vip/export", {"format": "meta"}, 404, "unknown_segment"),
        (f"{base}/all/export", {"format": "tiktok"}, 400, "invalid_field"),
        (f"{base}/all/export", {}, 400, "invalid_field"),
        (f"{base}/all/export", {"format": "meta", "campaignId": "nope"}, 404, "unknown_campaign"),
    ]
    other = create_profile(session, create_merchant_account(session, email="other@example.com"))
    cases.append(
        (
            f"/merchant/api/profiles/{other.id}/audiences/all/export",
            {"format": "meta"},
            404,
            "not_found",
        )
    )
    for path, params, status, code in cases:
        response = client.get(path, params=params, headers=owner)
        assert response.status_code == status, (path, params, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        body = response.json()
        assert body["code"] == code and body["success"] is False and body["status"] == status


def test_campaign_export_leaves_out_its_control_group(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    customers = [
        add_customer(session, shop.store, email=f"person{i}@example.com") for i in range(60)
    ]
    created = client.post(
        f"/merchant/api/profiles/{shop.profile.id}/campaigns",
        json={
            "campaignId": "spring",
            "name": "Spring",
            "startsAt": "2026-01-01T00:00:00Z",
            "holdoutPercent": 50,
        },
        headers=owner,
    )
    assert created.status_code == 200, created.text
    salt = session.scalar(text("SELECT salt FROM campaigns WHERE campaign_id = 'spring'"))
    session.commit()  # hands SQLite's one connection back to the app

    # The group by CONTRACT §7's rule, computed here from the stored salt with hmac directly.
    def in_control(customer_id: int) -> bool:
        digest = hmac.new(bytes(salt), str(customer_id).encode(), hashlib.sha256).hexdigest()
        return int(digest[:8], 16) < 50 * 2**32 // 100

    expected_test = {_sha(c.email or "") for c in customers if not in_control(c.id)}
    assert 0 < len(expected_test) < 60  # both groups are there
    response = client.get(
        f"/merchant/api/profiles/{shop.profile.id}/audiences/all/export",
        params={"format": "meta", "campaignId": "spring"},
        headers=owner,
    )
    assert response.status_code == 200, response.text
    rows = list(csv.reader(io.StringIO(response.text)))[1:]
    assert {row[0] for row in rows} == expected_test
    assert len(_export(client, shop, owner, "all", "meta")) == 61  # without campaignId: all
