"""What the receipt page shows: the order's figures formatted for a customer.

Money is formatted by its currency's real number of minor units (ISO 4217 via
Babel: JPY has none, KWD three) in the store country's English conventions.
Values the partner sent that do not parse are shown as given, never a 500.
"""

from __future__ import annotations

from typing import Any

from babel import Locale
from babel.dates import format_date, format_time

from partnerlink.orders.models import Order
from partnerlink.orders.schemas import local_time, store_snapshot
from partnerlink.stores.models import Store
from partnerlink.web.money import format_money, locale_for

# Item keys shown in their own columns; any other scalar key is shown under the item's name.
_ITEM_COLUMNS = frozenset({"itemId", "itemName", "itemPrice", "itemQuantity", "itemTax"})
_MAX_EXTRA_LENGTH = 200


def receipt_context(order: Order, store: Store) -> dict[str, Any]:
    """The template's values for one receipt."""
    locale = locale_for(store.country_code)
    currency = order.order_currency
    snapshot = store_snapshot(order, store)
    details = order.details if isinstance(order.details, dict) else {}
    when = local_time(order)
    items = [_item(item, currency, locale) for item in _objects(details.get("orderItems"))]
    taxes = [_int(item.get("itemTax")) for item in _objects(details.get("orderItems"))]
    payments = [_payment(p, currency, locale) for p in _objects(details.get("orderPayments"))]
    return {
        "store": {
            "name": snapshot.get("storeName") or store.name,
            "address": snapshot.get("storeAddress"),
            "locality": _locality(snapshot),
            "country": locale.territories.get(str(snapshot.get("storeCountryCode") or ""), ""),
            "phone": snapshot.get("storePhoneNumber"),
        },
        "order_id": order.order_id,
        "order_type": order.order_type,
        "date": format_date(when, "long", locale=locale),
        "time": format_time(when, "short", locale=locale),
        "iso_time": when.isoformat(),
        "lines": items,
        "tax_total": (
            format_money(sum(t for t in taxes if t is not None), currency, locale)
            if any(t is not None for t in taxes)
            else None
        ),
        "payments": payments,
        "total": format_money(order.order_price, currency, locale),
        "currency": currency,
    }


def _locality(snapshot: dict[str, Any]) -> str:
    """'Springfield, IL 62701': city, region and postal code, whichever are known."""
    city, region, postal = (
        str(snapshot.get(key) or "").strip()
        for key in ("storeCity", "storeState", "storePostalCode")
    )
    place = ", ".join(part for part in (city, region) if part)
    return " ".join(part for part in (place, postal) if part)


def _objects(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: object) -> int | None:
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _money_or_none(value: object, currency: str | None, locale: Locale) -> str | None:
    return None if value is None else format_money(value, currency, locale)


def _item(item: dict[str, Any], currency: str, locale: Locale) -> dict[str, Any]:
    extras = [
        (str(key), str(value)[:_MAX_EXTRA_LENGTH])
        for key, value in item.items()
        if key not in _ITEM_COLUMNS and isinstance(value, str | int | float | bool)
    ]
    return {
        "name": item.get("itemName") or item.get("itemId") or "Item",
        "quantity": item.get("itemQuantity"),
        "price": _money_or_none(item.get("itemPrice"), currency, locale),
        "tax": _money_or_none(item.get("itemTax"), currency, locale),
        "extras": extras,
    }


def _payment(payment: dict[str, Any], currency: str, locale: Locale) -> dict[str, Any]:
    last4 = payment.get("paymentLast4")
    return {
        "type": payment.get("paymentType") or "Payment",
        "card": payment.get("paymentCardType"),
        "last4": f"•••• {last4}" if last4 else None,
        "amount": _money_or_none(payment.get("paymentSum"), currency, locale),
    }
