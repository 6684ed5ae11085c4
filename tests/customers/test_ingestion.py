"""Ingestion of uploaded files through the real URL and the worker (CONTRACT.md §6)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.customers.service import resolve_customer
from partnerlink.settings import Settings
from tests.customers.conftest import ingest
from tests.factories import ConnectedStoreFixture, create_store


def customers(session: Session, profile_id: str) -> list[tuple[Any, ...]]:
    rows = session.execute(
        select(
            Customer.email,
            Customer.phone_number,
            Customer.first_name,
            Customer.last_name,
            Customer.city,
            Customer.country_code,
        )
        .where(Customer.profile_id == profile_id)
        .order_by(Customer.id)
    ).all()
    session.rollback()
    return [tuple(r) for r in rows]


def counts(status: dict[str, Any]) -> tuple[int, ...]:
    return tuple(status[k] for k in ("records", "created", "updated", "unchanged", "rejected"))


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


def test_records_are_normalized_and_stored(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    status = ingest(client, app, settings, connected, SAMPLE)
    assert status["status"] == "done"
    assert counts(status) == (3, 3, 0, 0, 0)
    assert status["errors"] == []
    assert customers(session, connected.profile.id) == [
        ("ann@example.com", "+14155552671", "Ann", "Lee", "SF", "US"),
        ("bob@example.com", None, "Bob", None, None, None),
        (None, "+447700900123", "Cy", None, None, None),
    ]


def test_status_body_has_exactly_the_contract_fields(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    status = ingest(client, app, settings, connected, SAMPLE)
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
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(client, app, settings, connected, SAMPLE)
    before = customers(session, connected.profile.id)
    again = ingest(client, app, settings, connected, SAMPLE)
    assert counts(again) == (3, 0, 0, 3, 0)
    assert customers(session, connected.profile.id) == before


def test_duplicates_inside_one_file_collapse(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    records = [
        {"email": "ann@example.com", "firstName": "Ann"},
        {"email": " ANN@example.com ", "firstName": "Ann"},
        {"email": "ann@example.com", "city": "Oslo"},
        {"phoneNumber": "+14155552671"},
        {"phoneNumber": "415-555-2671", "lastName": "Doe"},
    ]
    status = ingest(client, app, settings, connected, records)
    assert counts(status) == (5, 2, 0, 3, 0)
    assert customers(session, connected.profile.id) == [
        ("ann@example.com", None, "Ann", None, "Oslo", None),
        (None, "+14155552671", None, "Doe", None, None),
    ]
    again = ingest(client, app, settings, connected, records)
    assert counts(again) == (5, 0, 0, 5, 0)


def test_later_duplicate_with_other_values_wins_and_re_upload_stays_unchanged(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    records = [
        {"email": "ann@example.com", "firstName": "Ann"},
        {"email": "ann@example.com", "firstName": "Anna"},
    ]
    assert counts(ingest(client, app, settings, connected, records)) == (2, 1, 0, 1, 0)
    assert customers(session, connected.profile.id)[0][2] == "Anna"
    assert counts(ingest(client, app, settings, connected, records)) == (2, 0, 0, 2, 0)


def test_changed_fields_count_as_updated_and_empty_ones_keep_stored_values(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(client, app, settings, connected, SAMPLE)
    changes = [
        {"email": "ann@example.com", "city": "Oakland", "firstName": ""},
        {"email": "bob@example.com", "lastName": None},
    ]
    status = ingest(client, app, settings, connected, changes)
    assert counts(status) == (2, 0, 1, 1, 0)
    assert customers(session, connected.profile.id)[0] == (
        "ann@example.com",
        "+14155552671",
        "Ann",
        "Lee",
        "Oakland",
        "US",
    )


def test_phone_only_customer_takes_the_email_of_a_later_upload(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(client, app, settings, connected, [{"phoneNumber": "+14155552671", "firstName": "Di"}])
    status = ingest(
        client,
        app,
        settings,
        connected,
        [{"email": "di@example.com", "phoneNumber": "415 555 2671"}],
    )
    assert counts(status) == (1, 0, 1, 0, 0)
    assert customers(session, connected.profile.id) == [
        ("di@example.com", "+14155552671", "Di", None, None, None)
    ]


def test_phone_of_a_customer_with_another_email_does_not_merge_them(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(
        client,
        app,
        settings,
        connected,
        [{"email": "a@example.com", "phoneNumber": "+14155552671"}],
    )
    status = ingest(
        client,
        app,
        settings,
        connected,
        [{"email": "b@example.com", "phoneNumber": "+14155552671"}],
    )
    assert counts(status) == (1, 1, 0, 0, 0)
    assert len(customers(session, connected.profile.id)) == 2


def test_record_without_email_matches_by_phone(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(
        client,
        app,
        settings,
        connected,
        [{"email": "a@example.com", "phoneNumber": "+14155552671"}],
    )
    status = ingest(
        client, app, settings, connected, [{"phoneNumber": "(415) 555-2671", "city": "SF"}]
    )
    assert counts(status) == (1, 0, 1, 0, 0)
    assert customers(session, connected.profile.id) == [
        ("a@example.com", "+14155552671", None, None, "SF", None)
    ]


def test_bad_records_are_rejected_with_index_and_reason_and_never_stop_the_file(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    records: list[Any] = [
        "not an object",
        {"firstName": "Nobody"},
        {"email": "not-an-email"},
        {"phoneNumber": "call me"},
        {"email": "nope", "phoneNumber": "12"},
        [{"email": "nested@example.com"}],
        None,
        {"email": 42, "phoneNumber": {"n": 1}},
        {"email": "", "phoneNumber": "   "},
        {"email": "not-an-email", "phoneNumber": "+14155552671", "firstName": "Phone"},
        {"email": "ok@example.com"},
    ]
    status = ingest(client, app, settings, connected, records)
    assert status["status"] == "done"
    assert counts(status) == (11, 2, 0, 0, 9)
    assert status["errors"] == [
        {"index": 0, "reason": "not an object"},
        {"index": 1, "reason": "neither email nor phoneNumber given"},
        {"index": 2, "reason": "email is invalid and there is no phoneNumber"},
        {"index": 3, "reason": "phoneNumber is invalid and there is no email"},
        {"index": 4, "reason": "email and phoneNumber are both invalid"},
        {"index": 5, "reason": "not an object"},
        {"index": 6, "reason": "not an object"},
        {"index": 7, "reason": "email and phoneNumber are both invalid"},
        {"index": 8, "reason": "neither email nor phoneNumber given"},
    ]
    assert customers(session, connected.profile.id) == [
        (None, "+14155552671", "Phone", None, None, None),
        ("ok@example.com", None, None, None, None, None),
    ]


def test_only_the_first_20_errors_are_listed(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    status = ingest(
        client, app, settings, connected, [{"city": "x"}] * 30 + [{"email": "a@example.com"}]
    )
    assert status["rejected"] == 30 and len(status["errors"]) == 20
    assert [e["index"] for e in status["errors"]] == list(range(20))


def test_phone_is_read_in_the_store_country(
    client: TestClient, app: FastAPI, settings: Settings, session: Session
) -> None:
    from tests.factories import create_connected_store

    german = create_connected_store(session, country_code="DE", currency="EUR")
    ingest(client, app, settings, german, [{"phoneNumber": "0151 12345678"}])
    assert customers(session, german.profile.id) == [
        (None, "+4915112345678", None, None, None, None)
    ]


def test_odd_but_valid_json_is_handled(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    records = [
        {"email": "émile@exämple.fr", "firstName": "Émile\u0000", "city": "Zürich 🏔"},
        {
            "email": "x@example.com",
            "firstName": "y" * 5000,
            "countryCode": "Germany",
            "extra": {"deep": [1, 2]},
        },
        {"email": "n@example.com", "phoneNumber": 1e400, "lastName": 12345678901234567890123},
    ]
    body = json.dumps(records).replace("Infinity", "1e400").encode()
    body = b"\xef\xbb\xbf \n" + body  # a UTF-8 byte order mark, as some exporters write
    status = ingest(client, app, settings, connected, body)
    assert status["status"] == "done", status
    assert counts(status) == (3, 3, 0, 0, 0)
    stored = customers(session, connected.profile.id)
    assert stored[0] == ("émile@exämple.fr", None, "Émile", None, "Zürich 🏔", None)
    assert stored[1][2] == "y" * 200 and stored[1][5] is None


def test_empty_array_is_done_with_nothing(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    status = ingest(client, app, settings, connected, [])
    assert status["status"] == "done" and counts(status) == (0, 0, 0, 0, 0)


def test_file_that_is_not_an_array_fails_with_a_reason(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    for body in (
        b'{"email": "a@example.com"}',
        b'"text"',
        b"42",
        b"null",
        b"email,phone\na@b.com,1",
    ):
        status = ingest(client, app, settings, connected, body)
        assert status["status"] == "failed"
        assert status["reason"] == "the file is not a JSON array of customer records"
        assert counts(status) == (0, 0, 0, 0, 0)
    assert customers(session, connected.profile.id) == []


def test_empty_file_fails_with_a_reason(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    status = ingest(client, app, settings, connected, b"  \n")
    assert status["status"] == "failed"
    assert "empty" in status["reason"]


def test_truncated_file_fails_and_keeps_the_complete_records_before_the_break(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    body = b'[{"email": "a@example.com"}, {"email": "b@example.com"}, {"email": "c@exa'
    status = ingest(client, app, settings, connected, body)
    assert status["status"] == "failed"
    assert "truncated" in status["reason"]
    assert counts(status) == (2, 2, 0, 0, 0)
    assert [c[0] for c in customers(session, connected.profile.id)] == [
        "a@example.com",
        "b@example.com",
    ]


def test_invalid_json_fails_without_quoting_the_file(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    body = b'[{"email": "secret.person@example.com"} {"email": "x"}]'
    status = ingest(client, app, settings, connected, body)
    assert status["status"] == "failed"
    assert "invalid JSON" in status["reason"] and "secret" not in status["reason"]
    bad_utf8 = ingest(client, app, settings, connected, b'["\xff\xfe secret"]')
    assert bad_utf8["status"] == "failed" and "secret" not in bad_utf8["reason"]


def test_trailing_content_after_the_array_fails(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    status = ingest(client, app, settings, connected, b'[{"email": "a@example.com"}] [1]')
    assert status["status"] == "failed" and status["created"] == 1


def test_stores_of_one_profile_share_its_customers(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(client, app, settings, connected, SAMPLE)
    resolved = resolve_customer(
        session,
        profile_id=connected.profile.id,
        default_region="US",
        email="ANN@example.com",
        phone_number=None,
    )
    assert resolved is not None and resolved.first_name == "Ann"
    session.rollback()
    other_store = create_store(session, connected.profile, name="Second shop")
    assert other_store.profile_id == connected.profile.id


def test_the_worker_is_idle_without_uploads(app: FastAPI, settings: Settings) -> None:
    from partnerlink.customers.tasks import ingest_next_upload

    assert ingest_next_upload(app.state.sessionmaker, settings) == 0
