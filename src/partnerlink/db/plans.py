"""Reads over a whole profile planned for the values they are given, on PostgreSQL.

psycopg prepares a statement once it has run five times on a connection, and PostgreSQL
may then run it by one generic plan, made without the parameters' values, whenever that
plan's estimated cost is no worse than the plans made for the values so far. That suits
the hot paths' look-ups by key, which have one good plan whatever the key. It fails the
reads over a profile, whose best plan depends on how many rows the profile and the
period hold: for a profile far larger than the average, the results call became several
times slower from its eleventh run on a connection (figures: bench/README.md, "The same
trap in the results call"). Planning such a read each time costs little beside it.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

_CUSTOM_PLANS = text("SET LOCAL plan_cache_mode = force_custom_plan")
# session.info: the transaction the setting was made in (a request's read session and the
# services it calls each ask for it; it is sent once a transaction).
_SET_IN = "custom plans set in"


def plan_for_given_values(session: Session) -> None:
    """Until the session's transaction ends, every statement it runs is planned for its own
    parameters, prepared or not. SQLite plans each statement for its values anyway."""
    if session.get_bind().dialect.name != "postgresql":
        return
    transaction = session.get_transaction()
    if transaction is not None and session.info.get(_SET_IN) is transaction:
        return
    session.execute(_CUSTOM_PLANS)
    session.info[_SET_IN] = session.get_transaction()
