"""The worker's clean-up of idempotency keys past their 24 hours."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.engine import committed_session
from partnerlink.idempotency.service import delete_expired
from partnerlink.settings import Settings


def forget_expired_keys(sessions: sessionmaker[Session], _settings: Settings) -> int:
    """Deletes a bounded number of expired keys in one transaction; how many."""
    with committed_session(sessions) as session:
        return delete_expired(session)
