"""Journaling a batch of orders on the event loop: one statement, no thread (PostgreSQL).

Under load nearly every batch of orders is journaled (orders/intake/journal.py). On a worker
thread that cost a hop from the event loop and back (anyio's thread pool: a queue, a
condition variable, the GIL handed over twice), a good share of the serving process's
CPU (py-spy, bench/orders.py; bench/README.md), and three round trips: the token look-up with
BEGIN, the append, COMMIT. Here the batch's tokens are checked and its accepted orders
appended by one statement in a transaction of its own (autocommit), sent on psycopg's
asyncio connection: the event loop goes on parsing the next requests while PostgreSQL
works, and answers once the statement has returned, that is once it is committed and
durable.

The token check is `tokens.service`'s own condition (ACCESS_JOINS, live_access_token),
so a batch is accepted and refused here exactly as on the thread
(`journal.journal_orders`). The decision to journal stays `OrderIntake`'s: a batch it
would journal without asking the database goes here; any other goes to the thread
(orders/intake/pipeline.py). So does a batch this statement fails on for another reason than
a lost connection (a store deleted under it, say): the thread's handler takes it order
by order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy import URL

from partnerlink.db import sets
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Statement
from partnerlink.orders.facts import facts_of, journal_text
from partnerlink.orders.intake.journal import JOURNALED, OrderIntake
from partnerlink.orders.intake.pipeline import refusals
from partnerlink.orders.service import OrderAnswer, OrderPost
from partnerlink.problems import InvalidToken
from partnerlink.security.secrets import digest
from partnerlink.tokens.service import ACCESS_JOINS, live_access_token

# The batch's token digests and its orders' journal forms, in arrival order, as arrays in
# PostgreSQL's binary form (db/sets.ARRAYS): each element travels length-prefixed, so
# PostgreSQL stores a journal form as the text it is without parsing it (as one JSON
# parameter it lexed every order's body, which cost it more CPU an order:
# bench/README.md). The statement answers the (1-based) places of the accepted ones. Ids
# follow the places: the rows are inserted in that order, as a store's orders must be
# applied.
_GIVEN = sets.RowSet({"token_hash": "text", "body": "text"}, form=sets.ARRAYS)
_APPEND = Statement(
    f"WITH given AS (SELECT r.n_ AS n, r.token_hash, r.body FROM {_GIVEN.source}),"
    " callers AS ("
    " SELECT given.n, given.body, c.id AS connection_id, c.store_id, s.profile_id"
    f" FROM given CROSS JOIN {ACCESS_JOINS} WHERE {live_access_token('given.token_hash')}),"
    " appended AS ("
    " INSERT INTO order_journal (profile_id, store_id, connection_id, body, received_at)"
    " SELECT profile_id, store_id, connection_id, body, :now FROM callers ORDER BY n)"
    " SELECT n FROM callers",
    binary=_GIVEN.binary,
)


class JournalAppender:
    """One server process's asyncio connection for journaling batches (opened on first
    use, opened again after it is lost); `close` at shutdown."""

    def __init__(self, url: URL, intake: OrderIntake) -> None:
        # libpq reads SQLAlchemy's URL once its driver name is plain "postgresql"; a host
        # that is down (not refusing) fails within 10 s, as the engine's (db/engine.py).
        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        if "connect_timeout" not in url.query:
            conninfo = make_conninfo(conninfo, connect_timeout=10)
        self.conninfo = conninfo
        self.intake = intake
        self.connection: psycopg.AsyncConnection[Any] | None = None

    async def journal(self, posts: Sequence[OrderPost]) -> list[OrderAnswer] | None:
        """The batch's outcomes once journaled here; None when it is the thread's to take."""
        if not self.intake.journals_without_asking(len(posts)):
            return None
        try:
            given = [
                {"token_hash": digest(post.token), "body": journal_text(facts_of(post.order))}
                for post in posts
            ]
            params = {**_GIVEN.parameter(given), "now": utcnow()}
            connection = await self._connection()
            cursor = await connection.execute(
                _APPEND.postgresql, [params[name] for name in _APPEND.postgresql_names]
            )
            accepted = {int(row[0]) for row in await cursor.fetchall()}
        except psycopg.OperationalError as error:  # the server or the network went away
            await self.close()
            return refusals(len(posts), error)
        except Exception:
            return None
        return [
            (True, JOURNALED) if place in accepted else (False, InvalidToken())
            for place in range(1, len(posts) + 1)
        ]

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self.connection is None or self.connection.closed:
            self.connection = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        return self.connection

    async def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None and not connection.closed:
            await connection.close()
