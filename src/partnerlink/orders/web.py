"""The hosted receipt page: `{receipt_url}/inv/{orderId}?k={receiptKey}`.

Served at /receipts/inv/ (the default receipt address) and at /connect/inv/,
SPEC.md's older variant, for a deployment that sets PARTNERLINK_RECEIPT_URL
to the connect address. A missing or wrong key gets the very same 404 page
as an unknown order, so a link cannot be probed for which orders exist.
The page shows an order; the link's key is the receipt's (receipts/queries.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from partnerlink.deps import SessionDep
from partnerlink.orders.receipt_view import receipt_context
from partnerlink.orders.service import open_receipt

router = APIRouter()

_templates = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent.parent / "templates"),
    autoescape=select_autoescape(default=True),
    auto_reload=False,
)

ReceiptKey = Annotated[str | None, Query(alias="k")]


@router.get("/receipts/inv/{order_id:path}", response_class=HTMLResponse)
@router.get("/connect/inv/{order_id:path}", response_class=HTMLResponse)
def receipt_page(order_id: str, session: SessionDep, key: ReceiptKey = None) -> HTMLResponse:
    """Renders the itemised receipt, or the not-found page (404)."""
    opened = open_receipt(session, order_id=order_id, key=key)
    if opened is None:
        return not_found_page()
    order, store = opened
    html = _templates.get_template("receipts/receipt.html").render(r=receipt_context(order, store))
    return HTMLResponse(html)


def not_found_page() -> HTMLResponse:
    html = _templates.get_template("receipts/not_found.html").render()
    return HTMLResponse(html, status_code=404)
