"""Keys what an older version left unkeyed in the STOP and suppression lists (CONTRACT §12).

Migration 0015 cannot key them: the key derives from the service key, which only
the application's settings know. So the step that brings the schema up to date
(`serve`, `worker` and `db upgrade`, before any server process starts) runs this
right after migrating, once, not every application start-up; it finds nothing to do
once done, and two processes doing it at once insert the same rows.

- A plain STOP number (it starts with `+`) becomes its keyed digest.
- An erased person's unkeyed SHA-256 cannot be re-keyed: the identifier is gone.
  Dropping it would let the person back into audiences; keeping it keeps a hash
  anyone can reverse for a phone number by enumerating numbers. So it becomes the
  keyed digest *of the SHA-256* (`digest_of = 'hmac-of-sha256'`): as unreadable as
  the rest of the list without the key, and still matched (a customer's identifiers
  are hashed, then keyed, in audiences/queries.py). The unkeyed hash is deleted.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences.models import DIGEST_OF_SHA256, LEGACY_SHA256, Suppression
from partnerlink.db.base import insert_new
from partnerlink.db.engine import committed_session
from partnerlink.receipts.models import SmsStop
from partnerlink.security.identifier_digests import identifier_digest, identifier_key


def key_legacy_digests_at_start(sessions: sessionmaker[Session], signing_key: bytes) -> int:
    """`key_legacy_digests` in a transaction of its own, with the service key's digest key."""
    with committed_session(sessions) as session:
        return key_legacy_digests(session, identifier_key(signing_key))


def key_legacy_digests(session: Session, digest_key: bytes) -> int:
    """Keys every plain STOP number and unkeyed suppression hash; answers how many."""
    connection = session.connection()
    plain = session.execute(
        select(SmsStop.phone_digest, SmsStop.stopped_at).where(SmsStop.phone_digest.startswith("+"))
    ).all()
    if plain:
        keyed = [
            {
                "phone_digest": identifier_digest(digest_key, r.phone_digest),
                "stopped_at": r.stopped_at,
            }
            for r in plain
        ]
        insert_new(connection, SmsStop.__table__, keyed)
        session.execute(
            delete(SmsStop).where(SmsStop.phone_digest.in_([r.phone_digest for r in plain]))
        )
    unkeyed = session.execute(
        select(Suppression.profile_id, Suppression.identifier_digest, Suppression.created_at).where(
            Suppression.digest_of == LEGACY_SHA256
        )
    ).all()
    for row in unkeyed:
        insert_new(
            connection,
            Suppression.__table__,
            [
                {
                    "profile_id": row.profile_id,
                    "identifier_digest": identifier_digest(digest_key, row.identifier_digest),
                    "digest_of": DIGEST_OF_SHA256,
                    "created_at": row.created_at,
                }
            ],
        )
        session.execute(
            delete(Suppression).where(
                Suppression.profile_id == row.profile_id,
                Suppression.identifier_digest == row.identifier_digest,
                Suppression.digest_of == LEGACY_SHA256,
            )
        )
    return len(plain) + len(unkeyed)
