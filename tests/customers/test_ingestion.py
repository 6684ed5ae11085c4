"""Ingestion of uploaded files through the real URL and the worker (CONTRACT.md §6)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from fastapi import FastAPI

from partnerlink.settings import Settings
from partnerlink.stores.service import open_connection
from partnerlink.tokens.service import issue_access_token
from tests.customers.conftest import Uploader, counts
from tests.factories import create_connected_store, create_store

SAMPLE = [
    {
        "email": "Ann@Example.com",
        "phoneNumber": "(415) 555-2671",
        "firstName": "Ann",
        "lastName": "Lee",
        "city": "SF",
        "countryCode": "us",
    },
    {"email": "bob@example.com", "firstName": "Bob"},
    {"phoneNumber": "+44 7700 900123", "firstName": "Cy"},
]


def test_records_are_normalized_and_stored(uploader: Uploader) -> None:
    status = uploader.ingest(SAMPLE)
    assert status["status"] == "done"
    assert counts(status) == (3, 3, 0, 0, 0)
    assert status["errors"] == []
    assert uploader.customers() == [
        ("ann@example.com", "+14155552671", "Ann", "Lee", "SF", "US"),
        ("bob@example.com", None, "Bob", None, None, None),
        (None, "+447700900123", "Cy", None, None, None),
    ]


def test_status_body_has_exactly_the_contract_fields(uploader: Uploader) -> None:
    status = uploader.ingest(SAMPLE)
    assert set(status) == {
        "uploadId",
        "status",
        "records",
        "created",
        "updated",
        "unchanged",
        "rejected",
        "errors",
    }


def test_re_uploading_the_same_list_creates_nothing_and_reports_unchanged(
    uploader: Uploader,
) -> None:
    uploader.ingest(SAMPLE)
    before = uploader.customers()
    again = uploader.ingest(SAMPLE)
    assert counts(again) == (3, 0, 0, 3, 0)
    assert uploader.customers() == before


def test_duplicates_inside_one_file_collapse(uploader: Uploader) -> None:
    records = [
        {"email": "ann@example.com", "firstName": "Ann"},
        {"email": " ANN@example.com ", "firstName": "Ann"},
        {"email": "ann@example.com", "city": "Oslo"},
        {"phoneNumber": "+14155552671"},
        {"phoneNumber": "415-555-2671", "lastName": "Doe"},
    ]
    status = uploader.ingest(records)
    assert counts(status) == (5, 2, 0, 3, 0)
    assert uploader.customers() == [
        ("ann@example.com", None, "Ann", None, "Oslo", None),
        (None, "+14155552671", None, "Doe", None, None),
    ]
    again = uploader.ingest(records)
    assert counts(again) == (5, 0, 0, 5, 0)


def test_later_duplicate_with_other_values_wins_and_re_upload_stays_unchanged(
    uploader: Uploader,
) -> None:
    records = [
        {"email": "ann@example.com", "firstName": "Ann"},
        {"email": "ann@example.com", "firstName": "Anna"},
    ]
    assert counts(uploader.ingest(records)) == (2, 1, 0, 1, 0)
    assert uploader.customers()[0][2] == "Anna"
    assert counts(uploader.ingest(records)) == (2, 0, 0, 2, 0)


def test_changed_fields_count_as_updated_and_empty_ones_keep_stored_values(
    uploader: Uploader,
) -> None:
    uploader.ingest(SAMPLE)
    changes = [
        {"email": "ann@example.com", "city": "Oakland", "firstName": ""},
        {"email": "bob@example.com", "lastName": None},
    ]
    status = uploader.ingest(changes)
    assert counts(status) == (2, 0, 1, 1, 0)
    assert uploader.customers()[0] == (
        "ann@example.com",
        "+14155552671",
        "Ann",
        "Lee",
        "Oakland",
        "US",
    )


def test_phone_only_customer_takes_the_email_of_a_later_upload(uploader: Uploader) -> None:
    uploader.ingest([{"phoneNumber": "+14155552671", "firstName": "Di"}])
    status = uploader.ingest(
        [{"email": "di@example.com", "phoneNumber": "415 555 2671"}],
    )
    assert counts(status) == (1, 0, 1, 0, 0)
    assert uploader.customers() == [("di@example.com", "+14155552671", "Di", None, None, None)]


def test_phone_of_a_customer_with_another_email_does_not_merge_them(uploader: Uploader) -> None:
    uploader.ingest(
        [{"email": "a@example.com", "phoneNumber": "+14155552671"}],
    )
    status = uploader.ingest(
        [{"email": "b@example.com", "phoneNumber": "+14155552671"}],
    )
    assert counts(status) == (1, 1, 0, 0, 0)
    assert len(uploader.customers()) == 2


def test_record_without_email_matches_by_phone(uploader: Uploader) -> None:
    uploader.ingest(
        [{"email": "a@example.com", "phoneNumber": "+14155552671"}],
    )
    status = uploader.ingest([{"phoneNumber": "(415) 555-2671", "city": "SF"}])
    assert counts(status) == (1, 0, 1, 0, 0)
    assert uploader.customers() == [("a@example.com", "+14155552671", None, None, "SF", None)]


def test_bad_records_are_rejected_with_index_and_reason_and_never_stop_the_file(
    uploader: Uploader,
) -> None:
    records: list[Any] = [
        {"firstName": "Nobody"},
        {"email": "not-an-email"},
        {"phoneNumber": "call me"},
        {"email": "nope", "phoneNumber": "12"},
        {"email": 42, "phoneNumber": {"n": 1}},
        {"email": "", "phoneNumber": "   "},
        {"email": "not-an-email", "phoneNumber": "+14155552671", "firstName": "Phone"},
        {"email": "ok@example.com"},
    ]
    status = uploader.ingest(records)
    assert status["status"] == "done"
    assert counts(status) == (8, 2, 0, 0, 6)
    assert status["errors"] == [
        {"index": 0, "reason": "neither email nor phoneNumber given"},
        {"index": 1, "reason": "email is invalid and there is no phoneNumber"},
        {"index": 2, "reason": "phoneNumber is invalid and there is no email"},
        {"index": 3, "reason": "email and phoneNumber are both invalid"},
        {"index": 4, "reason": "email must be a string; phoneNumber must be a string"},
        {"index": 5, "reason": "neither email nor phoneNumber given"},
    ]
    assert uploader.customers() == [
        (None, "+14155552671", "Phone", None, None, None),
        ("ok@example.com", None, None, None, None, None),
    ]


def test_only_the_first_20_errors_are_listed(uploader: Uploader) -> None:
    status = uploader.ingest([{"city": "x"}] * 30 + [{"email": "a@example.com"}])
    assert status["rejected"] == 30 and len(status["errors"]) == 20
    assert [e["index"] for e in status["errors"]] == list(range(20))


def _phone_warning(index: int) -> dict[str, Any]:
    return {
        "index": index,
        "reason": "phoneNumber is not a valid phone number; the record was kept without it",
        "field": "phoneNumber",
        "severity": "warning",
    }


def test_a_phone_that_does_not_parse_keeps_its_record_with_a_warning(uploader: Uploader) -> None:
    records: list[Any] = [
        {"email": "a@example.com", "phoneNumber": "call me", "firstName": "Ann"},
        {"firstName": "Nobody"},
        {"email": "b@example.com", "phoneNumber": "12"},
        {"email": "c@example.com", "phoneNumber": "   "},  # blank: not given, no warning
        {"email": "d@example.com", "phoneNumber": "+14155552671"},
    ]
    status = uploader.ingest(records)
    assert counts(status) == (5, 4, 0, 0, 1)
    assert status["errors"] == [
        _phone_warning(0),
        {"index": 1, "reason": "neither email nor phoneNumber given"},
        _phone_warning(2),
    ]
    # A matched record is warned of too; its stored phone stays (an empty field keeps it).
    again = uploader.ingest([{"email": "d@example.com", "phoneNumber": "nope"}])
    assert counts(again) == (1, 0, 0, 1, 0)
    assert again["errors"] == [_phone_warning(0)]
    assert [row[:3] for row in uploader.customers()] == [
        ("a@example.com", None, "Ann"),
        ("b@example.com", None, None),
        ("c@example.com", None, None),
        ("d@example.com", "+14155552671", None),
    ]


def test_warnings_and_rejections_share_the_first_20_in_the_files_order(
    uploader: Uploader,
) -> None:
    kept = {"email": "kept@example.com", "phoneNumber": "call me"}
    status = uploader.ingest([kept, {"city": "x"}] * 15)
    assert counts(status) == (30, 1, 0, 14, 15)
    assert status["errors"] == [
        _phone_warning(n)
        if n % 2 == 0
        else {"index": n, "reason": "neither email nor phoneNumber given"}
        for n in range(20)
    ]


def test_phone_is_read_in_the_store_country(uploader: Uploader) -> None:
    german = create_connected_store(
        uploader.session,
        country_code="DE",
        currency="EUR",
        email="de@example.com",
        pos_type="de-pos",
    )
    uploader.ingest([{"phoneNumber": "0151 12345678"}], german)
    assert uploader.customers(german.profile.id) == [
        (None, "+4915112345678", None, None, None, None)
    ]


def test_odd_but_valid_json_is_handled(uploader: Uploader) -> None:
    records = [
        {"email": "émile@exämple.fr", "firstName": "Émile", "city": "Zürich 🏔"},
        {"email": "x@example.com", "extra": {"deep": [1, 2], "big": 1e400}, "n": 10**22},
        {"email": "n@example.com", "countryCode": " de ", "lastName": None, "city": ""},
    ]
    body = json.dumps(records).replace("Infinity", "1e400").encode()
    body = b"\xef\xbb\xbf \n" + body  # a UTF-8 byte order mark, as some exporters write
    status = uploader.ingest(body)
    assert status["status"] == "done", status
    assert counts(status) == (3, 3, 0, 0, 0)
    assert uploader.customers() == [
        ("émile@exämple.fr", None, "Émile", None, "Zürich 🏔", None),
        ("x@example.com", None, None, None, None, None),
        ("n@example.com", None, None, None, None, "DE"),
    ]


def test_empty_array_is_done_with_nothing(uploader: Uploader) -> None:
    status = uploader.ingest([])
    assert status["status"] == "done" and counts(status) == (0, 0, 0, 0, 0)


def test_file_that_is_not_an_array_fails_with_a_reason(uploader: Uploader) -> None:
    for body in (
        b'{"email": "a@example.com"}',
        b'"text"',
        b"42",
        b"null",
        b"email,phone\na@b.com,1",
    ):
        status = uploader.ingest(body)
        assert status["status"] == "failed"
        assert status["reason"] == "the file is not a JSON array of customer records"
        assert counts(status) == (0, 0, 0, 0, 0)
    assert uploader.customers() == []


def test_empty_file_fails_with_a_reason(uploader: Uploader) -> None:
    status = uploader.ingest(b"  \n")
    assert status["status"] == "failed"
    assert "empty" in status["reason"]


def assert_failed_and_nothing_applied(uploader: Uploader, status: dict[str, Any]) -> None:
    assert status["status"] == "failed"
    assert "nothing was applied" in status["reason"]
    assert counts(status) == (0, 0, 0, 0, 0)
    assert uploader.customers() == [("ann@example.com", None, "Ann", None, None, None)]


MANY = [{"email": f"c{n}@example.com", "firstName": "New"} for n in range(12_000)]
# More than two batches before the fault, and a change to a stored customer in the first.
BEFORE_THE_FAULT = json.dumps([{"email": "ann@example.com", "firstName": "Changed"}, *MANY])


def test_truncated_file_fails_and_applies_nothing(uploader: Uploader) -> None:
    uploader.ingest([{"email": "ann@example.com", "firstName": "Ann"}])
    body = (BEFORE_THE_FAULT[:-1] + ', {"email": "late@exa').encode()
    status = uploader.ingest(body)
    assert "truncated" in status["reason"]
    assert_failed_and_nothing_applied(uploader, status)


@pytest.mark.parametrize("element", ['"text"', "null", "42", "[]", '[{"email": "x@example.com"}]'])
def test_a_non_object_element_after_valid_ones_fails_the_file_and_applies_nothing(
    uploader: Uploader, element: str
) -> None:
    uploader.ingest([{"email": "ann@example.com", "firstName": "Ann"}])
    body = (BEFORE_THE_FAULT[:-1] + f", {element}]").encode()
    status = uploader.ingest(body)
    assert status["reason"] == f"element {len(MANY) + 1} is not an object; nothing was applied"
    assert_failed_and_nothing_applied(uploader, status)


def test_invalid_json_fails_without_quoting_the_file(uploader: Uploader) -> None:
    body = b'[{"email": "secret.person@example.com"} {"email": "x"}]'
    status = uploader.ingest(body)
    assert status["status"] == "failed"
    assert "invalid JSON" in status["reason"] and "secret" not in status["reason"]
    bad_utf8 = uploader.ingest(b'["\xff\xfe secret"]')
    assert bad_utf8["status"] == "failed" and "secret" not in bad_utf8["reason"]


def test_trailing_content_after_the_array_fails(uploader: Uploader) -> None:
    status = uploader.ingest(b'[{"email": "a@example.com"}] [1]')
    assert status["status"] == "failed" and status["created"] == 0
    assert uploader.customers() == []


def test_stores_of_one_profile_share_its_customers(uploader: Uploader) -> None:
    uploader.ingest(SAMPLE)
    session = uploader.session
    second = create_store(session, uploader.connected.profile, name="Second shop")
    connection = open_connection(
        session,
        store_id=second.id,
        partner_id=uploader.connected.partner.partner.id,
        method="pairing",
        pos_type="acme-pos",
    )
    token, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=None)
    session.commit()
    other = dataclasses.replace(uploader.connected, store=second, access_token=token)
    assert counts(uploader.ingest(SAMPLE, other)) == (3, 0, 0, 3, 0)
    assert len(uploader.customers()) == 3


def test_the_worker_is_idle_without_uploads(app: FastAPI, settings: Settings) -> None:
    from partnerlink.worker import run_once

    assert run_once(app.state.sessionmaker, settings) == 0
