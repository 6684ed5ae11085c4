"""Request-scoped dependencies shared by every domain: the session, the settings, a list's
page parameters."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Annotated, Any
from weakref import WeakKeyDictionary

from fastapi import Depends, Query, Request
from sqlalchemy.orm import Session

from partnerlink.db.engine import committed_session
from partnerlink.db.pages import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from partnerlink.db.plans import plan_for_given_values
from partnerlink.settings import Settings

_gates: WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    WeakKeyDictionary()
)


def bearer_credentials(authorization: str) -> str:
    """The credentials of an `Authorization: Bearer ...` header value ("" for any other)."""
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def database_slots(request: Request) -> int:
    """How many connections the pool can hand out at once."""
    pool: Any = request.app.state.engine.pool
    size = pool.size() if hasattr(pool, "size") else 1
    overflow = max(0, getattr(pool, "_max_overflow", 0))
    return max(1, int(size) + int(overflow))


async def database_gate(request: Request) -> AsyncIterator[None]:
    """Admits a request to the database only while a connection is free for it.

    A request keeps its connection between thread-pool steps (dependencies, the
    route, the commit). Without this gate, more simultaneous requests than
    threads could fill every thread with a wait for a connection while the
    request holding it waits for a thread: on SQLite's single connection that
    stalled everything for the pool timeout. Waiting here costs no thread.
    """
    loop = asyncio.get_running_loop()
    per_app = _gates.setdefault(loop, {})
    gate = per_app.get(id(request.app))
    if gate is None:
        gate = per_app[id(request.app)] = asyncio.Semaphore(database_slots(request))
    async with gate:
        yield


def get_session(
    request: Request, _admitted: Annotated[None, Depends(database_gate, scope="function")]
) -> Iterator[Session]:
    """The one commit point of a request.

    Scope "function" makes the commit happen before the response is sent, so a
    client never sees 200 for something that was then rolled back. A raised
    error rolls everything back: a refused request stores nothing.
    """
    with committed_session(request.app.state.sessionmaker) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session, scope="function")]


def get_read_session(request: Request, session: SessionDep) -> Iterator[Session]:
    """A session for the heavy reads: on the read replica (`PARTNERLINK_DATABASE_READ_URL`)
    when there is one, else the request's own session. Never committed: a hot standby
    refuses writes, and nothing written through it would be seen by the primary anyway.

    Ownership checks stay on the primary's session (a profile made a moment ago must not
    answer 404 while the replica catches up); only the data read for the answer may lag.

    Its reads cover whole profiles, so each is planned for its own values
    (db/plans.py): a generic plan made for an average profile made a large one's results
    several times slower.
    """
    replica = request.app.state.read_sessionmaker
    if replica is None:
        plan_for_given_values(session)
        yield session
        return
    read_session: Session = replica()
    try:
        plan_for_given_values(read_session)
        yield read_session
    finally:
        read_session.rollback()
        read_session.close()


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]
ReadSessionDep = Annotated[Session, Depends(get_read_session, scope="function")]


@dataclass(frozen=True)
class PageRequest:
    """A list's `limit` and `cursor` query parameters (CONTRACT.md §13)."""

    limit: int
    cursor: str | None


def page_request(
    limit: Annotated[
        int,
        Query(ge=1, le=MAX_PAGE_SIZE, description="Items per page: 1 to 1,000 (default 100)."),
    ] = DEFAULT_PAGE_SIZE,
    cursor: Annotated[
        str | None,
        Query(description="The previous page's `nextCursor`; absent for the first page."),
    ] = None,
) -> PageRequest:
    return PageRequest(limit=limit, cursor=cursor or None)


PageDep = Annotated[PageRequest, Depends(page_request)]
