"""Idempotency keys (idempotency/service.py): claim, record, replay, expiry, a racing claim."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.base import utcnow
from partnerlink.idempotency.models import IdempotencyKey
from partnerlink.idempotency.service import (
    IdempotencyKeyReused,
    KeyedRequest,
    StoredAnswer,
    claim,
    delete_expired,
    record,
    request_digest,
)

SCOPE = "connection:c-1"
REQUEST = KeyedRequest("key-1", request_digest("POST", "/v1/orders/batch", b'{"orders": [1]}'))
ANSWER = StoredAnswer(200, '{"statusCode":200}')


def first_request(sessions: sessionmaker[Session], request: KeyedRequest = REQUEST) -> None:
    with sessions() as session:
        assert claim(session, scope=SCOPE, request=request) is None
        record(session, scope=SCOPE, request=request, answer=ANSWER)
        session.commit()


def test_digest_compares_json_as_data_and_names_the_endpoint() -> None:
    a = request_digest("POST", "/p", b'{"a": 1, "b": [1, 2]}')
    assert a == request_digest("POST", "/p", b'{"b":[1,2],"a":1}')
    assert a != request_digest("POST", "/q", b'{"a": 1, "b": [1, 2]}')
    assert a != request_digest("POST", "/p", b'{"a": 1, "b": [2, 1]}')


def test_a_recorded_key_replays_and_another_body_is_refused(app) -> None:  # type: ignore[no-untyped-def]
    sessions = app.state.sessionmaker
    first_request(sessions)
    with sessions() as session:
        assert claim(session, scope=SCOPE, request=REQUEST) == ANSWER
        other = KeyedRequest("key-1", request_digest("POST", "/v1/orders/batch", b"{}"))
        with pytest.raises(IdempotencyKeyReused):
            claim(session, scope=SCOPE, request=other)
        # Another caller's scope knows nothing of it.
        assert claim(session, scope="connection:c-2", request=other) is None
        session.rollback()


def test_a_key_older_than_24_hours_is_a_new_request_and_is_cleaned_up(app) -> None:  # type: ignore[no-untyped-def]
    sessions = app.state.sessionmaker
    first_request(sessions)
    first_request(sessions, KeyedRequest("key-2", REQUEST.digest))
    with sessions() as session:
        session.execute(
            update(IdempotencyKey).values(created_at=utcnow() - timedelta(hours=24, seconds=1))
        )
        session.commit()
    with sessions() as session:
        assert claim(session, scope=SCOPE, request=REQUEST) is None  # applies anew
        record(session, scope=SCOPE, request=REQUEST, answer=ANSWER)
        session.commit()
    with sessions() as session:
        assert delete_expired(session) == 1  # key-2; key-1 was claimed again
        session.commit()
        assert session.scalars(select(IdempotencyKey.key)).all() == ["key-1"]


def test_a_claim_racing_an_uncommitted_one_waits_then_replays(app) -> None:  # type: ignore[no-untyped-def]
    sessions: sessionmaker[Session] = app.state.sessionmaker
    outcome: list[object] = []
    holder = sessions()
    assert claim(holder, scope=SCOPE, request=REQUEST) is None  # claimed, not committed

    def second() -> None:
        with sessions() as session:
            outcome.append(claim(session, scope=SCOPE, request=REQUEST))
            session.rollback()

    racer = threading.Thread(target=second)
    racer.start()
    racer.join(timeout=0.5)
    assert racer.is_alive()  # waits for the first request's commit, applying nothing
    record(holder, scope=SCOPE, request=REQUEST, answer=ANSWER)
    holder.commit()
    holder.close()
    racer.join(timeout=30)
    assert outcome == [ANSWER]
