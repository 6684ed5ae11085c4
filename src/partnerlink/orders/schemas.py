"""The order of POST /v1/orders, validated field by field (SPEC.md, CONTRACT.md §6).

Types are strict: a JSON number where SPEC.md asks for a string (`orderPrice`:
2400) answers 400, it is not coerced, so that a partner finds the mistake in
testing rather than losing a leading zero or a minor-unit digit in production.
Unknown keys of `orderDetails`, of items and of payments are kept as given.

The answers that show an order (GET /v1/orders, the merchant's listing) are built
here too, in the field names of the request.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
)
from pydantic_core import PydanticCustomError

from partnerlink.kit.currencies import currency_codes
from partnerlink.kit.text import unstorable_characters
from partnerlink.orders.models import Order
from partnerlink.stores.models import Store
from partnerlink.stores.schemas import StoreProfileIn

# At most 15 digits: such an amount keeps every digit as a float (an ad platform's
# conversion value); sums of any number of them are exact all the same (db/sums.py).
MONEY_DIGITS = 15
MAX_MONEY = 10**MONEY_DIGITS - 1
_MONEY = re.compile(rf"-?[0-9]{{1,{MONEY_DIGITS}}}")
# CONTRACT §12: an order's createdAt (its UTC date) and a Results period lie within these.
FIRST_DAY = date(2000, 1, 1)
LAST_DAY = date(2999, 12, 31)
# Free text of an order (names, item names, details) may hold line breaks and controls.
_UNSTORABLE = unstorable_characters(controls=False, line_breaks=False)
_INT64 = 2**63
MAX_DETAIL_DEPTH = 32


def _string(value: object) -> object:
    # Numbers, booleans, arrays and objects are refused rather than coerced.
    if value is not None and not isinstance(value, str):
        raise PydanticCustomError("string_type", "must be a string")
    return value


def _present(value: object) -> object:
    # null, or a blank string, in a required field is reported like an absent one.
    if value is None or (isinstance(value, str) and not value.strip()):
        raise PydanticCustomError("missing", "required")
    return _string(value)


def _integer(value: object) -> object:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise PydanticCustomError("int_type", "must be an integer")
    return value


def clean_text(value: str) -> str:
    """Refuses what no database column can hold: NUL characters and lone surrogates."""
    if _UNSTORABLE.search(value) is None:
        return value
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    raise ValueError("must be valid Unicode text")


def parse_money(value: str) -> str:
    """A string of an optional minus sign and ASCII digits, an amount in minor units."""
    if not _MONEY.fullmatch(value):
        raise ValueError(
            f"must be a string of an optional minus sign and at most {MONEY_DIGITS} digits "
            f"(from -{MAX_MONEY} to {MAX_MONEY}), an amount in minor units, "
            'e.g. "2400" or "-100"'
        )
    return value


def parse_currency(value: str) -> str:
    code = value.strip().upper()
    if code not in currency_codes():
        raise ValueError('must be a known ISO 4217 currency code, e.g. "USD"')
    return code


def parse_timestamp(value: object) -> datetime:
    """ISO-8601 text; a timestamp without an offset is taken as UTC (CONTRACT.md §6)."""
    if not isinstance(value, str):
        raise PydanticCustomError("string_type", "must be a string")
    try:
        parsed = datetime.fromisoformat(clean_text(value).strip())
    except ValueError:
        raise ValueError("must be an ISO-8601 timestamp, e.g. 2024-05-01T12:30:00Z") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range") from None
    return parsed


def parse_order_time(value: object) -> datetime:
    """An order's createdAt: a timestamp whose UTC date lies from FIRST_DAY to LAST_DAY."""
    parsed = parse_timestamp(value)
    if not FIRST_DAY <= parsed.astimezone(UTC).date() <= LAST_DAY:
        raise ValueError(f"must be a time from {FIRST_DAY} to {LAST_DAY} (UTC)")
    return parsed


Text = Annotated[str, BeforeValidator(_string), AfterValidator(clean_text)]
Money = Annotated[str, BeforeValidator(_string), AfterValidator(parse_money)]
Timestamp = Annotated[datetime, PlainValidator(parse_timestamp, json_schema_input_type=str)]
OrderTime = Annotated[datetime, PlainValidator(parse_order_time, json_schema_input_type=str)]
Required = BeforeValidator(_present)
Quantity = Annotated[int, BeforeValidator(_integer), Field(gt=-_INT64, lt=_INT64)]


class OrderItemIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    itemId: Text | None = Field(None, max_length=200)
    itemName: Text | None = Field(None, max_length=500)
    itemPrice: Money | None = None
    itemQuantity: Quantity | None = None
    itemTax: Money | None = None


class OrderPaymentIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    paymentType: Text | None = Field(None, max_length=100)
    paymentId: Text | None = Field(None, max_length=200)
    paymentSum: Money | None = None
    paymentCardType: Text | None = Field(None, max_length=100)
    paymentLast4: Text | None = Field(None, max_length=4)


def storable_json(value: object) -> object:
    """Refuses what a JSON column cannot keep: NUL, lone surrogates, NaN, deep nesting.

    The common case is settled by one C-speed encoding; only a doubtful value is
    walked, which also names the offending place.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (ValueError, RecursionError):  # NaN/Infinity, lone surrogates, absurd nesting
        return _walk(value)
    if "\\u0000" in text or text.count("{") + text.count("[") > MAX_DETAIL_DEPTH:
        return _walk(value)
    return value


def _walk(value: object, path: str = "orderDetails", depth: int = 0) -> object:
    if depth > MAX_DETAIL_DEPTH:
        raise PydanticCustomError("too_deep", "is nested too deeply")
    if isinstance(value, str):
        _storable_string(value, path)
    elif isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError(
            "non_finite_number", "{path} must be a finite number", {"path": path}
        )
    elif isinstance(value, dict):
        for key, item in value.items():
            _storable_string(key, path)
            _walk(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", depth + 1)
    return value


def _storable_string(value: str, path: str) -> None:
    try:
        clean_text(value)
    except ValueError as error:
        raise PydanticCustomError(
            "invalid_text", "{path} {reason}", {"path": path, "reason": str(error)}
        ) from None


class OrderDetailsIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    orderStatus: Text | None = Field(None, max_length=50)
    orderType: Text | None = Field(None, max_length=200)
    orderItems: list[OrderItemIn] | None = Field(None, max_length=10_000)
    orderPayments: list[OrderPaymentIn] | None = Field(None, max_length=1_000)


class OrderIn(BaseModel):
    """An order as sent by the partner; re-sending the same `orderId` updates it."""

    orderId: Annotated[Text, Required] = Field(
        max_length=200, description="Your order id; re-sending it updates the order."
    )
    orderPrice: Annotated[Money, Required] = Field(
        description="Total in minor units, a string of an optional minus sign and at most "
        f'{MONEY_DIGITS} digits: "2400" is 24.00 USD.'
    )
    orderCurrency: Annotated[str, Required, AfterValidator(parse_currency)] = Field(
        description="ISO 4217 currency code."
    )
    createdAt: Annotated[OrderTime, Required] = Field(
        description="ISO-8601 time of the order, from 2000-01-01 to 2999-12-31; without an "
        "offset it is taken as UTC."
    )
    updatedAt: Timestamp | None = Field(
        None, description="ISO-8601 time of the last change; an older re-send is not applied."
    )
    customerFirstName: Text | None = Field(None, max_length=200)
    customerLastName: Text | None = Field(None, max_length=200)
    customerPhoneNumber: Text | None = Field(
        None, max_length=50, description="Enables the SMS e-receipt; E.164 preferred."
    )
    customerEmail: Text | None = Field(None, max_length=320)
    customerPostalCode: Text | None = Field(
        None,
        max_length=16,
        description="The customer's postal code, kept on the customer (a match key for "
        "Google's audiences); the order does not store it.",
    )
    orderDetails: Annotated[OrderDetailsIn | None, BeforeValidator(storable_json)] = Field(
        None,
        description="orderStatus (CLOSED matters for e-receipts), orderType, orderItems, "
        "orderPayments; any other key is kept as given.",
    )
    store: StoreProfileIn | None = Field(
        None, description="Store snapshot (fields of PUT /v1/stores); updates the store profile."
    )

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "orderId": "A-1001",
                    "orderPrice": "2400",
                    "orderCurrency": "USD",
                    "createdAt": "2024-05-01T12:30:00.000Z",
                    "updatedAt": "2024-05-01T12:41:00.000Z",
                    "customerFirstName": "Ada",
                    "customerPhoneNumber": "+14155550123",
                    "customerEmail": "ada@example.com",
                    "orderDetails": {
                        "orderStatus": "CLOSED",
                        "orderType": "dine-in",
                        "orderItems": [
                            {
                                "itemId": "sku-1",
                                "itemName": "Flat white",
                                "itemPrice": "1200",
                                "itemQuantity": 2,
                                "itemTax": "192",
                            }
                        ],
                        "orderPayments": [
                            {
                                "paymentType": "card",
                                "paymentId": "p-1",
                                "paymentSum": "2400",
                                "paymentCardType": "VISA",
                                "paymentLast4": "4242",
                            }
                        ],
                    },
                }
            ]
        }
    )


class OrderAccepted(BaseModel):
    statusCode: int = 200


class FieldError(BaseModel):
    field: str
    message: str


class OrderBatchResult(BaseModel):
    """One order's fate in a batch: 200, or 400 with the errors POST /v1/orders gives."""

    orderId: str | None
    status: int
    errors: list[FieldError] | None = None


class OrderBatchOut(BaseModel):
    """Declared for the API reference (and the clients generated from it)."""

    statusCode: int = 200
    results: list[OrderBatchResult]


def batch_result(order_id: str | None, errors: list[dict[str, str]] | None) -> dict[str, Any]:
    """One element's `OrderBatchResult`: stored (no errors), or refused with its errors."""
    if errors is None:
        return {"orderId": order_id, "status": 200}
    return {"orderId": order_id, "status": 400, "errors": errors}


def batch_json(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The batch's `OrderBatchOut`: one result per element, in the request's order."""
    return {"statusCode": 200, "results": results}


# The answer to a stored order is always the same bytes: neither the route nor the fast
# lane serializes it per request.
ACCEPTED = b'{"statusCode":200}'


def order_json(order: Order, store: Store) -> dict[str, Any]:
    """An order in the field names of POST /v1/orders."""
    details = order.details or {}
    return {
        "orderId": order.order_id,
        "orderPrice": str(order.order_price),
        "orderCurrency": order.order_currency,
        "createdAt": local_time(order).isoformat(),
        "updatedAt": order.partner_updated_at.isoformat() if order.partner_updated_at else None,
        "orderStatus": order.order_status,
        "orderType": order.order_type,
        "orderItems": details.get("orderItems") or [],
        "orderPayments": details.get("orderPayments") or [],
        "orderDetails": details,
        "store": store_snapshot(order, store),
        "customerFirstName": order.customer_first_name,
        "customerLastName": order.customer_last_name,
        "customerEmail": order.customer_email,
        "customerPhoneNumber": order.customer_phone_number,
    }


def local_time(order: Order) -> datetime:
    """The order's createdAt with the offset it was sent with."""
    offset = timedelta(minutes=order.ordered_at_offset_minutes or 0)
    try:
        return order.ordered_at.astimezone(timezone(offset))
    except (OverflowError, ValueError):
        return order.ordered_at


def store_snapshot(order: Order, store: Store) -> dict[str, Any]:
    """The store as sent with the order, else the store's current profile, in request names."""
    current = {
        "storeName": store.name,
        "storeAddress": store.address,
        "storeCountryCode": store.country_code,
        "storeCity": store.city,
        "storeState": store.state,
        "storePostalCode": store.postal_code,
        "storePhoneNumber": store.phone_number,
        "storeCurrency": store.currency,
    }
    return {**current, **(order.store_snapshot or {})}


def recent_order_json(row: Any) -> dict[str, Any]:
    """An order of the merchant's listing (CONTRACT.md §4), with its conversion class."""
    return {
        "orderId": row.order_id,
        "orderPrice": str(row.order_price),
        "orderCurrency": row.order_currency,
        "orderStatus": row.order_status,
        "conversion": row.conversion,
        "createdAt": row.ordered_at.isoformat(),
    }


MAX_BATCH = 1000


class OrderBatchIn(BaseModel):
    orders: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description="1 to 1,000 orders, each exactly the body of `POST /v1/orders`.",
    )
