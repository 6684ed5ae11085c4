"""The orders' read barrier as a FastAPI dependency (the barrier itself: intake/barrier.py).

Under load an order is acknowledged into the journal and applied a moment later
(intake/journal.py). A route that reads what an applied order writes (the order and its
touches' class, the customer it creates or changes, its receipt, the store snapshot it
carries) declares `SETTLED_ORDERS`, or create_app includes its router with it
(app._include_routers): before the route's own dependencies run, every order acknowledged
before the request began is applied in the request's session, so the route reads it as if
it had been stored at once. Routes that read none of it do without, and pay nothing.

The command line settles in `cli.common.unit_of_work`, with `settle_journal` alone: this
module brings FastAPI, which no command should import to start.
"""

from __future__ import annotations

from fastapi import Depends

from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.orders.intake.barrier import settle_journal


def settle_orders_first(session: SessionDep, settings: SettingsDep) -> None:
    """Applies the orders acknowledged before this request, in its session, before its reads."""
    settle_journal(session, settings)


SETTLED_ORDERS = Depends(settle_orders_first)
