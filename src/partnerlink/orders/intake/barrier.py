"""The orders' read barrier: what a reader runs first, so that it sees every order
acknowledged into the journal (orders/intake/journal.py) before it began.

Routes run it through orders/deps.py's SETTLED_ORDERS, declared where they read what an
order writes; the command line through cli.common.unit_of_work."""

from __future__ import annotations

from sqlalchemy.orm import Session

from partnerlink.db.raw import Sql, Statement
from partnerlink.settings import Settings

_NEWEST_WAITING = Statement("SELECT max(id) FROM order_journal WHERE failed_at IS NULL")


def settle_journal(session: Session, settings: Settings) -> None:
    """Applies every order journaled before now, in `session`'s own transactions, so
    that the reads that follow see them. When the journal is empty (nearly always) this
    is one indexed look-up."""
    newest = Sql.of_session(session).row(_NEWEST_WAITING, {})[0]
    if newest is None:
        return
    # The applier (the orders' services and schemas) is imported only when orders wait:
    # every command-line start runs this barrier, and nearly always finds none.
    from partnerlink.orders.intake.journal import apply_in_session

    session.commit()
    apply_in_session(session, settings=settings, wait=True, up_to=int(newest))
