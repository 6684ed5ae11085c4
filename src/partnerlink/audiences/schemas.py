"""Request bodies and answers of audiences' routes: a person named by email or phone, the
customer-list download (the API's and the page's), a person's data."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict

from partnerlink.audiences.access import PersonData
from partnerlink.audiences.service import Exclusion, ExportPlan, export_lines
from partnerlink.customers.models import Customer
from partnerlink.customers.schemas import customer_json
from partnerlink.orders.schemas import order_json
from partnerlink.receipts.models import Receipt


class PersonIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    email: str | None = None
    phoneNumber: str | None = None


def download(
    request: Request, plan: ExportPlan, exclude: Exclusion | None = None
) -> StreamingResponse:
    """The export as a CSV attachment, streamed a chunk of customers at a time."""
    return StreamingResponse(
        export_lines(request.app.state.read_engine, plan, exclude=exclude),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{plan.filename}"'},
    )


def _customer_json(customer: Customer) -> dict[str, Any]:
    """The merchant API's customer, with the id as stored (a number) and its own times."""
    return {
        **customer_json(customer),
        "postalCode": customer.postal_code,
        "id": customer.id,
        "createdAt": customer.created_at.isoformat(),
        "updatedAt": customer.updated_at.isoformat(),
    }


def _without_key(link: str) -> str:
    """The receipt link without its query: the key in it opens the receipt page."""
    parts = urlsplit(link)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _receipt_json(receipt: Receipt, order_id: str) -> dict[str, Any]:
    return {
        "orderId": order_id,
        "to": receipt.to_phone,
        "status": receipt.status,
        "link": _without_key(receipt.link),
        "createdAt": receipt.created_at.isoformat(),
        "sentAt": receipt.sent_at.isoformat() if receipt.sent_at else None,
    }


def person_json(found: PersonData) -> dict[str, Any]:
    """A person's data (CONTRACT §12): customer, orders, optedOut (+ optedOutBy), receipts."""
    return {
        "customer": _customer_json(found.customer),
        "orders": [
            {
                **order_json(order, store),
                "storeId": store.id,
                "conversion": order.conversion,
                "campaignId": order.campaign_id,
            }
            for order, store in found.orders
        ],
        "optedOut": bool(found.opted_out_by),
        "optedOutBy": found.opted_out_by,
        "receipts": [_receipt_json(receipt, order_id) for receipt, order_id in found.receipts],
    }
