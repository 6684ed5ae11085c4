"""The worker's task of orders: applying the orders journaled under load (the intake's
journal, orders/intake/journal.py) once they have gathered."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.raw import Sql
from partnerlink.orders.intake.journal import GATHER_SECONDS, apply_in_session, gathering_left
from partnerlink.settings import Settings


def apply_journaled_orders(
    sessions: sessionmaker[Session], settings: Settings, *, gather_seconds: float = GATHER_SECONDS
) -> int:
    """Applies what waits in the journal, unless another applier is at work, or fewer than
    a batch wait and none for `gather_seconds` yet; answers how many orders it applied."""
    return apply_when_gathered(sessions, settings, gather_seconds=gather_seconds)[0]


def apply_when_gathered(
    sessions: sessionmaker[Session], settings: Settings, *, gather_seconds: float = GATHER_SECONDS
) -> tuple[int, float | None]:
    """The worker's task: `apply_journaled_orders`, and, when orders wait that have not
    gathered yet, in how many seconds they will have (None: nothing waits), so that the
    worker looks again then rather than a poll interval later."""
    with sessions() as session:
        left = gathering_left(Sql.of_session(session), gather_seconds)
        if left is None or left > 0:
            session.rollback()
            return 0, left
        return apply_in_session(session, settings=settings, wait=False), None
