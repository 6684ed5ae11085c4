"""SMS providers: `outbox` (recorded and logged, not sent) and `twilio` (Messages REST API).

A provider answers each message with an outcome: sent (with the provider's
message id), retry (throttled, server error, network trouble) or failed (a
refusal that will not change on retry, such as an invalid number).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx

from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.receipts")

SendResult = Literal["sent", "retry", "failed"]
TWILIO_TIMEOUT_SECONDS = 10.0
# Where Twilio reports each message's fate (receipts/twilio_callbacks.py), under the
# public URL; the same address is what the callback's signature is checked against.
TWILIO_STATUS_PATH = "/webhooks/twilio/status"
TWILIO_INBOUND_PATH = "/webhooks/twilio/inbound"


@dataclass(frozen=True)
class Delivery:
    outcome: SendResult
    message_id: str | None = None
    reason: str | None = None
    retry_after_seconds: float | None = None


@dataclass(frozen=True)
class Message:
    receipt_id: int
    order_id: str
    to: str
    body: str


class SmsProvider(Protocol):
    name: str

    def send(self, message: Message) -> Delivery: ...

    def close(self) -> None: ...


def mask_phone(phone: str | None) -> str:
    """Enough of a number for an operator to tell messages apart, not enough to dial."""
    if not phone:
        return "-"
    return phone[:3] + "*" * max(0, len(phone) - 5) + phone[-2:]


class OutboxProvider:
    """Records instead of sending: `partnerlink sms list` shows the messages."""

    name = "outbox"
    # Its message ids are this and the receipt's id: the worker writes them in SQL as it
    # claims and marks the receipts sent in one statement (receipts/tasks.py).
    message_id_prefix = "outbox-"

    def send(self, message: Message) -> Delivery:
        # The link carries the receipt key: log the order and a masked number, never the body.
        log.info(
            "e-receipt SMS for order %s to %s recorded in the outbox",
            message.order_id,
            mask_phone(message.to),
        )
        return Delivery("sent", message_id=f"{self.message_id_prefix}{message.receipt_id}")

    def close(self) -> None:
        pass


class TwilioProvider:
    """POST /2010-04-01/Accounts/{Sid}/Messages.json, form-encoded, HTTP basic auth."""

    name = "twilio"

    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        self.account_sid = settings.twilio_account_sid or ""
        self.auth_token = settings.twilio_auth_token or ""
        self.sender = settings.twilio_from or ""
        self.url = (
            f"{settings.twilio_api_url.rstrip('/')}/2010-04-01/Accounts/"
            f"{self.account_sid}/Messages.json"
        )
        self.status_callback = f"{settings.public_url}{TWILIO_STATUS_PATH}"
        self.client = client or httpx.Client(timeout=TWILIO_TIMEOUT_SECONDS)

    def send(self, message: Message) -> Delivery:
        if not (self.account_sid and self.auth_token and self.sender):
            return Delivery("failed", reason="twilio is not configured (account SID, token, from)")
        try:
            response = self.client.post(
                self.url,
                data={
                    "To": message.to,
                    "From": self.sender,
                    "Body": message.body,
                    "StatusCallback": self.status_callback,
                },
                auth=(self.account_sid, self.auth_token),
            )
        except httpx.HTTPError as error:
            return Delivery("retry", reason=f"twilio unreachable: {type(error).__name__}")
        payload = _json_object(response)
        if response.status_code in (200, 201):
            sid = payload.get("sid")
            log.info(
                "e-receipt SMS for order %s to %s accepted by twilio",
                message.order_id,
                mask_phone(message.to),
            )
            return Delivery("sent", message_id=str(sid)[:100] if sid else None)
        reason = _twilio_reason(response.status_code, payload)
        if response.status_code == 429 or response.status_code >= 500:
            return Delivery(
                "retry", reason=reason, retry_after_seconds=_retry_after(response.headers)
            )
        return Delivery("failed", reason=reason)

    def close(self) -> None:
        self.client.close()


def _json_object(response: httpx.Response) -> dict[str, object]:
    try:
        payload = response.json()
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _twilio_reason(status: int, payload: dict[str, object]) -> str:
    """Twilio's error body is {code, message, more_info, status}."""
    code = payload.get("code")
    text = str(payload.get("message") or "no message")
    reason = f"twilio HTTP {status}" + (f" error {code}" if code else "") + f": {text}"
    return reason[:400]


def _retry_after(headers: httpx.Headers) -> float | None:
    try:
        value = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return value if 0 <= value <= 86_400 else None


def provider_for(settings: Settings) -> SmsProvider:
    if settings.sms_provider == "twilio":
        return TwilioProvider(settings)
    return OutboxProvider()
