"""Endpoint 8 of SPEC.md and the upload life cycle and matching rules of CONTRACT.md §6."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.blackbox.box import Box, Connected, assert_problem, unique
from tests.blackbox.conftest import Cast

CUSTOMER_FIELDS = {"id", "email", "phoneNumber", "firstName", "lastName", "city", "countryCode"}
STATUS_FIELDS = {
    "uploadId",
    "status",
    "records",
    "created",
    "updated",
    "unchanged",
    "rejected",
    "errors",
}


@pytest.fixture
def conn(box: Box, cast: Cast) -> Connected:
    """A fresh profile and store per test, placed in the US by the partner's PUT (a store
    made by consent in an empty profile has no country until then): the customer base
    starts empty."""
    connected = box.connect_by_consent(cast.plain, cast.merchant)
    placed = box.http.put(
        "/v1/stores",
        json={"storeName": "Shop", "storeAddress": "1 Main St", "storeCountryCode": "US"},
        headers=connected.auth,
    )
    assert placed.status_code == 200, placed.text
    return connected


def _upload_url(box: Box, conn: Connected) -> str:
    r = box.http.get("/v1/customers", headers=conn.auth)
    assert r.status_code == 200, r.text
    assert list(r.json()) == ["uploadUrl"]
    return str(r.json()["uploadUrl"])


def _by_email(box: Box, conn: Connected) -> dict[str | None, dict[str, Any]]:
    listing = box.customers(conn.merchant, conn.profile_id)
    return {c["email"]: c for c in listing["customers"]}


def test_upload_url_is_an_absolute_url_of_this_service(box: Box, conn: Connected) -> None:
    url = _upload_url(box, conn)
    assert url.startswith(box.url + "/")
    assert _upload_url(box, conn) != url


def test_upload_life_cycle_counts_records(box: Box, conn: Connected) -> None:
    url = _upload_url(box, conn)
    records = [
        {"email": "ann@example.com", "firstName": "Ann", "lastName": "Lee", "city": "Austin"},
        {"phoneNumber": "+15035550101", "firstName": "Bob"},
        {"email": "cy@example.com", "phoneNumber": "+15035550102", "countryCode": "US"},
        {"firstName": "Nobody"},
    ]
    put = httpx.put(url, json=records, timeout=30)
    assert put.status_code == 200, put.text
    received = put.json()
    assert set(received) == {"uploadId", "status"}
    assert received["status"] in ("received", "processing", "done")

    status = box.wait_upload(conn, received["uploadId"])
    assert set(status) >= STATUS_FIELDS
    assert status["uploadId"] == received["uploadId"]
    assert status["status"] == "done"
    assert status["records"] == 4
    assert (status["created"], status["updated"], status["unchanged"]) == (3, 0, 0)
    assert status["rejected"] == 1
    assert len(status["errors"]) == 1
    assert status["errors"][0]["index"] == 3
    assert isinstance(status["errors"][0]["reason"], str)

    listing = box.customers(conn.merchant, conn.profile_id)
    assert listing["total"] == 3
    for customer in listing["customers"]:
        assert set(customer) == CUSTOMER_FIELDS
    ann = _by_email(box, conn)["ann@example.com"]
    assert (ann["firstName"], ann["lastName"], ann["city"]) == ("Ann", "Lee", "Austin")


def test_reuploading_the_same_list_creates_no_duplicates(box: Box, conn: Connected) -> None:
    records = [
        {"email": "dee@example.com", "firstName": "Dee"},
        {"phoneNumber": "+15035550103", "firstName": "Eve"},
    ]
    first = box.upload_customers(conn, records)
    assert (first["created"], first["rejected"]) == (2, 0)
    second = box.upload_customers(conn, records)
    assert second["status"] == "done"
    assert (second["created"], second["updated"], second["unchanged"]) == (0, 0, 2)
    assert box.customers(conn.merchant, conn.profile_id)["total"] == 2


def test_second_put_to_the_same_url_answers_403_upload_url_used(box: Box, conn: Connected) -> None:
    url = _upload_url(box, conn)
    assert httpx.put(url, json=[{"email": "f@example.com"}], timeout=30).status_code == 200
    again = httpx.put(url, json=[{"email": "g@example.com"}], timeout=30)
    assert_problem(again, 403, "upload_url_used", secrets=(url.rsplit("/", 1)[-1],))


def test_tampered_upload_url_answers_403(box: Box, conn: Connected) -> None:
    url = _upload_url(box, conn)
    last = url[-1]
    tampered = url[:-1] + ("A" if last != "A" else "B")
    assert_problem(httpx.put(tampered, json=[], timeout=30), 403)
    assert_problem(httpx.put(box.url + "/v1/uploads/" + unique("x"), json=[], timeout=30), 403)
    # The untampered URL still works: refusals consumed nothing.
    assert httpx.put(url, json=[], timeout=30).status_code == 200


def test_upload_needs_no_authorization_header_of_the_service(box: Box, conn: Connected) -> None:
    url = _upload_url(box, conn)
    put = httpx.put(url, json=[{"email": "h@example.com"}], timeout=30)
    assert put.status_code == 200
    assert box.wait_upload(conn, put.json()["uploadId"])["created"] == 1


def test_email_matching_is_trimmed_and_case_blind(box: Box, conn: Connected) -> None:
    box.upload_customers(conn, [{"email": "ivy@example.com", "firstName": "Ivy"}])
    status = box.upload_customers(conn, [{"email": "  IVY@Example.COM ", "lastName": "Ives"}])
    assert (status["created"], status["updated"]) == (0, 1)
    ivy = _by_email(box, conn)["ivy@example.com"]
    assert (ivy["firstName"], ivy["lastName"]) == ("Ivy", "Ives")
    assert box.customers(conn.merchant, conn.profile_id)["total"] == 1


def test_phone_is_kept_in_e164_read_in_the_store_country(box: Box, conn: Connected) -> None:
    box.upload_customers(conn, [{"phoneNumber": "(503) 555-0104", "firstName": "Jo"}])
    (jo,) = box.customers(conn.merchant, conn.profile_id)["customers"]
    assert jo["phoneNumber"] == "+15035550104"
    status = box.upload_customers(conn, [{"phoneNumber": "+1 503 555 0104", "lastName": "Jay"}])
    assert (status["created"], status["updated"]) == (0, 1)


def test_phone_only_customer_takes_the_email_of_a_later_record(box: Box, conn: Connected) -> None:
    box.upload_customers(conn, [{"phoneNumber": "+15035550105", "firstName": "Kim"}])
    status = box.upload_customers(
        conn, [{"email": "kim@example.com", "phoneNumber": "+15035550105"}]
    )
    assert (status["created"], status["updated"]) == (0, 1)
    listing = box.customers(conn.merchant, conn.profile_id)
    assert listing["total"] == 1
    (kim,) = listing["customers"]
    assert (kim["email"], kim["phoneNumber"], kim["firstName"]) == (
        "kim@example.com",
        "+15035550105",
        "Kim",
    )


def test_email_wins_over_phone_when_both_exist(box: Box, conn: Connected) -> None:
    box.upload_customers(
        conn,
        [
            {"email": "lea@example.com", "firstName": "Lea"},
            {"email": "max@example.com", "phoneNumber": "+15035550106", "firstName": "Max"},
        ],
    )
    # Lea's email with Max's phone: matched by email (Lea); Max's record is not merged.
    status = box.upload_customers(
        conn, [{"email": "lea@example.com", "phoneNumber": "+15035550107"}]
    )
    assert status["created"] == 0
    customers = _by_email(box, conn)
    assert len(customers) == 2
    assert customers["lea@example.com"]["phoneNumber"] == "+15035550107"
    assert customers["max@example.com"]["phoneNumber"] == "+15035550106"


def test_new_email_with_phone_of_an_emailed_customer_creates_a_new_one(
    box: Box, conn: Connected
) -> None:
    box.upload_customers(conn, [{"email": "ned@example.com", "phoneNumber": "+15035550108"}])
    status = box.upload_customers(
        conn, [{"email": "other@example.com", "phoneNumber": "+15035550108"}]
    )
    assert status["created"] == 1
    assert box.customers(conn.merchant, conn.profile_id)["total"] == 2


def test_empty_incoming_fields_do_not_overwrite(box: Box, conn: Connected) -> None:
    box.upload_customers(conn, [{"email": "oli@example.com", "firstName": "Oli", "city": "Salem"}])
    status = box.upload_customers(
        conn, [{"email": "oli@example.com", "firstName": "", "city": "Eugene"}]
    )
    assert status["updated"] == 1
    oli = _by_email(box, conn)["oli@example.com"]
    assert (oli["firstName"], oli["city"]) == ("Oli", "Eugene")


def test_invalid_email_counts_as_absent(box: Box, conn: Connected) -> None:
    status = box.upload_customers(
        conn,
        [
            {"email": "not-an-email", "phoneNumber": "+15035550109"},
            {"email": "still not an email"},
            {"phoneNumber": "not a phone"},
        ],
    )
    assert (status["created"], status["rejected"]) == (1, 2)
    assert sorted(e["index"] for e in status["errors"]) == [1, 2]
    (only,) = box.customers(conn.merchant, conn.profile_id)["customers"]
    assert only["email"] is None and only["phoneNumber"] == "+15035550109"


def test_at_most_twenty_errors_are_listed(box: Box, conn: Connected) -> None:
    status = box.upload_customers(conn, [{"firstName": f"n{i}"} for i in range(25)])
    assert status["rejected"] == 25
    assert len(status["errors"]) == 20


def test_stores_of_one_profile_share_the_customer_base(
    box: Box, cast: Cast, conn: Connected
) -> None:
    sibling = box.connect_by_consent(cast.plain, cast.merchant, profile_id=conn.profile_id)
    assert sibling.store_id != conn.store_id
    box.upload_customers(conn, [{"email": "pat@example.com"}])
    status = box.upload_customers(sibling, [{"email": "pat@example.com", "firstName": "Pat"}])
    assert (status["created"], status["updated"]) == (0, 1)
    assert box.customers(cast.merchant, conn.profile_id)["total"] == 1


def test_profiles_do_not_share_customers(box: Box, cast: Cast, conn: Connected) -> None:
    other = box.connect_by_consent(cast.plain, cast.merchant)
    box.upload_customers(conn, [{"email": "quin@example.com"}])
    assert box.upload_customers(other, [{"email": "quin@example.com"}])["created"] == 1


def test_upload_status_is_seen_only_by_its_store(box: Box, cast: Cast, conn: Connected) -> None:
    url = _upload_url(box, conn)
    upload_id = httpx.put(url, json=[], timeout=30).json()["uploadId"]
    other = box.connect_by_consent(cast.plain, cast.merchant)
    r = box.http.get(f"/v1/customers/uploads/{upload_id}", headers=other.auth)
    assert r.status_code != 200
    assert_problem(r, r.status_code)
    unknown = box.http.get(f"/v1/customers/uploads/{unique('nope')}", headers=conn.auth)
    assert_problem(unknown, 404)
    no_token = box.http.get(f"/v1/customers/uploads/{upload_id}")
    assert_problem(no_token, 403, "invalid_token")


def test_merchant_customer_listing_limit_and_isolation(
    box: Box, cast: Cast, conn: Connected
) -> None:
    box.upload_customers(conn, [{"email": f"r{i}@example.com"} for i in range(3)])
    r = box.http.get(
        f"/merchant/api/profiles/{conn.profile_id}/customers",
        params={"limit": 2},
        headers=cast.merchant.auth,
    )
    assert r.status_code == 200
    assert r.json()["total"] == 3
    assert len(r.json()["customers"]) == 2
    foreign = box.http.get(
        f"/merchant/api/profiles/{conn.profile_id}/customers", headers=cast.other.auth
    )
    assert_problem(foreign, 404)
    no_session = box.http.get(f"/merchant/api/profiles/{conn.profile_id}/customers")
    assert_problem(no_session, 401)


def test_phone_without_plus_is_read_in_the_store_country(box: Box, cast: Cast) -> None:
    profile = box.new_profile(cast.merchant)
    store = box.new_manual_store(cast.merchant, profile["id"], country="DE", currency="EUR")
    conn = box.connect_by_consent(cast.plain, cast.merchant, store_id=store["id"])
    box.upload_customers(conn, [{"phoneNumber": "030 12345678"}])
    (customer,) = box.customers(cast.merchant, profile["id"])["customers"]
    assert customer["phoneNumber"] == "+493012345678"


@pytest.mark.parametrize("content", [b'{"email": "a@example.com"}', b"[{", b"not json at all"])
def test_file_that_is_not_a_json_array_stores_no_customer(
    box: Box, conn: Connected, content: bytes
) -> None:
    put = httpx.put(
        _upload_url(box, conn),
        content=content,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    if put.status_code == 200:
        assert box.wait_upload(conn, put.json()["uploadId"])["status"] == "failed"
    else:
        assert_problem(put, 400)
    assert box.customers(conn.merchant, conn.profile_id)["total"] == 0
