"""The receipts' replies: the text messages `partnerlink sms list` shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from partnerlink.receipts.models import Receipt


def messages_json(receipts: Sequence[Receipt]) -> list[dict[str, Any]]:
    """Each message as `partnerlink sms list --json` prints it."""
    return [
        {
            "to": receipt.to_phone,
            "body": receipt.body,
            "link": receipt.link,
            "orderId": receipt.order_id,
            "storeId": receipt.store_id,
            "status": receipt.status,
            "createdAt": receipt.created_at.isoformat(),
        }
        for receipt in receipts
    ]
