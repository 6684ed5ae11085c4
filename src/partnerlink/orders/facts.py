"""What storing an order needs of it, and the journal's form of it.

`store_orders` (orders/service.py) reads a handful of an order's fields, its
`orderDetails` and its store snapshot as JSON text, and the snapshot itself.
`OrderFacts` holds exactly that, taken once from a validated `OrderIn`.

The journal (orders/intake/journal.py) keeps an acknowledged order as its facts, written
by the server that validated it, so that the worker applying it does not validate
the body a second time: measured with bench/orders_journal.py, validating took a
large share of the worker's CPU an order (pydantic calls the model's Python
validators field by field), against next to nothing for one `orjson.loads` here
(bench/README.md).

The journal's form is a JSON array whose first element is its version. A body of
POST /v1/orders is always a JSON object, so a journal row written before facts
were journaled (the body as received) is told apart without a column of its own,
and is validated as before (`from_journal`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import orjson

from partnerlink.orders.schemas import OrderIn
from partnerlink.stores.schemas import StoreProfileIn

_VERSION = 1


@dataclass(frozen=True, slots=True)
class OrderFacts:
    """A validated order, as far as storing it goes."""

    order_id: str
    order_price: str  # minor units, as validated ("2400")
    order_currency: str  # ISO 4217, upper case
    created_at: datetime  # with the offset it was sent with
    updated_at: datetime | None
    first_name: str | None
    last_name: str | None
    phone_number: str | None  # as sent; normalized where it is matched or texted
    email: str | None
    postal_code: str | None
    order_status: str | None
    order_type: str | None
    details_json: str | None  # orderDetails as given (unknown keys too); None when absent
    store: StoreProfileIn | None  # the store snapshot
    store_json: str | None  # the snapshot as given (only the fields sent)


def facts_of(order: OrderIn) -> OrderFacts:
    details = order.orderDetails
    store = order.store
    return OrderFacts(
        order_id=order.orderId,
        order_price=order.orderPrice,
        order_currency=order.orderCurrency,
        created_at=order.createdAt,
        updated_at=order.updatedAt,
        first_name=order.customerFirstName,
        last_name=order.customerLastName,
        phone_number=order.customerPhoneNumber,
        email=order.customerEmail,
        postal_code=order.customerPostalCode,
        order_status=details.orderStatus if details else None,
        order_type=details.orderType if details else None,
        # Serialized by pydantic in one pass, only what was sent.
        details_json=details.model_dump_json(exclude_unset=True) if details else None,
        store=store,
        store_json=store.model_dump_json(exclude_unset=True) if store else None,
    )


def journal_text(facts: OrderFacts) -> str:
    """The journal's form of an order's facts (read back by `from_journal`)."""
    return orjson.dumps(
        [
            _VERSION,
            facts.order_id,
            facts.order_price,
            facts.order_currency,
            facts.created_at.isoformat(),
            facts.updated_at.isoformat() if facts.updated_at else None,
            facts.first_name,
            facts.last_name,
            facts.phone_number,
            facts.email,
            facts.postal_code,
            facts.order_status,
            facts.order_type,
            facts.details_json,
            facts.store_json,
        ]
    ).decode()


def from_journal(text: str) -> OrderFacts:
    """An order's facts from its journal row: the array `journal_text` wrote, or, for a
    row journaled before facts were, the body as received, validated as a POST's is."""
    if not text.startswith("["):
        return facts_of(OrderIn.model_validate_json(text))
    (
        version,
        order_id,
        order_price,
        order_currency,
        created_at,
        updated_at,
        first_name,
        last_name,
        phone_number,
        email,
        postal_code,
        order_status,
        order_type,
        details_json,
        store_json,
    ) = orjson.loads(text)
    if version != _VERSION:
        raise ValueError(f"journaled order of an unknown form (version {version!r})")
    return OrderFacts(
        order_id=order_id,
        order_price=order_price,
        order_currency=order_currency,
        created_at=datetime.fromisoformat(created_at),
        updated_at=datetime.fromisoformat(updated_at) if updated_at is not None else None,
        first_name=first_name,
        last_name=last_name,
        phone_number=phone_number,
        email=email,
        postal_code=postal_code,
        order_status=order_status,
        order_type=order_type,
        details_json=details_json,
        # Validated once more only when sent (a few orders in a hundred): its values are
        # already the validated ones, which validate to themselves (tests/orders/test_facts.py).
        store=StoreProfileIn.model_validate_json(store_json) if store_json is not None else None,
        store_json=store_json,
    )
