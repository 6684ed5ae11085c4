"""Idempotency keys (CONTRACT.md §13): the first answer, kept 24 h, replayed on a retry.

A request with a key first claims it (claim: an insert under the unique (scope, key), in
the request's own transaction), then applies its effect, then records its answer in the
claim (record), and the request's one commit makes effect and record durable together:
a crash never leaves an applied request without its record, nor a record without its
effect. A second request with the key finds the record and answers it again, applying
nothing; one racing the first waits on the unique index until the first commits, then
finds it. Only successful answers are recorded: a refused request rolls back, claim
included (nothing is stored when a request is refused), so a retry runs anew.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.idempotency.models import IdempotencyKey
from partnerlink.problems import Conflict

REPLAY_WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 255


class IdempotencyKeyReused(Conflict):
    code = "idempotency_key_reused"
    detail = (
        "This Idempotency-Key was sent with another request within 24 hours; "
        "send a new key with a new request."
    )


@dataclass(frozen=True, slots=True)
class KeyedRequest:
    """A request's `Idempotency-Key` and the digest that tells "the same request"."""

    key: str
    digest: str


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    status: int
    body: str  # the JSON text first sent


def request_digest(method: str, path: str, body: bytes) -> str:
    """SHA-256 of the method, the path and the body, JSON compared as data (key order and
    spacing aside), so a client that serializes its retry anew still sends "the same body".
    The path makes a key sent to another endpoint another request."""
    try:
        canonical = json.dumps(
            json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=True
        ).encode()
    except (ValueError, UnicodeDecodeError):  # not JSON: the request is refused anyway
        canonical = body
    digest = hashlib.sha256(f"{method} {path}\n".encode())
    digest.update(canonical)
    return digest.hexdigest()


def claim(session: Session, *, scope: str, request: KeyedRequest) -> StoredAnswer | None:
    """None when this request is the first with its key in 24 h (the key is now claimed in
    the caller's transaction: `record` its answer before the commit); else the first
    request's answer. Another request under the key answers 409 `idempotency_key_reused`."""
    now = utcnow()
    stored = _stored(session, scope, request.key)
    if stored is not None and stored.created_at <= now - REPLAY_WINDOW:
        session.execute(delete(IdempotencyKey).where(IdempotencyKey.id == stored.id))
        stored = None
    if stored is None:
        try:
            with session.begin_nested():
                session.add(
                    IdempotencyKey(
                        scope=scope, key=request.key, request_digest=request.digest, created_at=now
                    )
                )
            return None
        except IntegrityError:  # a request with this key committed while this one waited
            stored = _stored(session, scope, request.key)
            if stored is None:  # claimed and then rolled back meanwhile: not ours to replay
                raise IdempotencyKeyReused() from None
    if stored.request_digest != request.digest or stored.status is None or stored.body is None:
        raise IdempotencyKeyReused()
    return StoredAnswer(stored.status, stored.body)


def record(session: Session, *, scope: str, request: KeyedRequest, answer: StoredAnswer) -> None:
    """Completes this request's claim with its answer (in the same transaction)."""
    session.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.scope == scope, IdempotencyKey.key == request.key)
        .values(status=answer.status, body=answer.body)
    )


def delete_expired(session: Session, *, now: datetime | None = None, limit: int = 1000) -> int:
    """Forgets up to `limit` keys older than 24 h (the worker's clean-up); how many. A claim
    also ignores and replaces an expired record of its own key, so this only bounds the
    table."""
    cutoff = (now or utcnow()) - REPLAY_WINDOW
    expired = (
        select(IdempotencyKey.id).where(IdempotencyKey.created_at <= cutoff).limit(limit)
    ).scalar_subquery()
    result = session.execute(delete(IdempotencyKey).where(IdempotencyKey.id.in_(expired)))
    return int(getattr(result, "rowcount", 0) or 0)


def _stored(session: Session, scope: str, key: str) -> IdempotencyKey | None:
    return session.scalar(
        select(IdempotencyKey)
        .where(IdempotencyKey.scope == scope, IdempotencyKey.key == key)
        .execution_options(populate_existing=True)
    )
