"""Twilio's requests to us: message status callbacks (here) and inbound replies
(audiences/sms_replies.py, which opts the customer out as well).

Every request must carry an `X-Twilio-Signature` valid for the configured auth
token over the public URL it was sent to and its form fields (checked by the
`twilio` package's RequestValidator); anything else answers 403 and changes
nothing. The URL is rebuilt from PARTNERLINK_PUBLIC_URL, not from the socket,
since behind a proxy or load balancer the two differ.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from twilio.request_validator import RequestValidator

from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.problems import Forbidden
from partnerlink.receipts.providers import TWILIO_STATUS_PATH
from partnerlink.receipts.service import record_delivery_status

router = APIRouter()

# An empty TwiML answer: nothing to say back (Twilio itself answers STOP and START).
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'
MAX_FIELD_CHARS = 2000


class InvalidTwilioSignature(Forbidden):
    code = "invalid_signature"
    detail = "The request does not carry a valid X-Twilio-Signature."


def signature_is_valid(auth_token: str, url: str, form: dict[str, str], signature: str) -> bool:
    """Twilio's own validator (HMAC-SHA1 over the URL and the sorted fields, compared in
    constant time)."""
    if not (auth_token and signature):
        return False
    return bool(RequestValidator(auth_token).validate(url, form, signature))


async def twilio_form(request: Request, settings: SettingsDep) -> dict[str, str]:
    """The form fields of a request signed by Twilio, else 403 (invalid_signature)."""
    form = await request.form()
    fields = {key: value for key, value in form.items() if isinstance(value, str)}
    url = settings.public_url + request.url.path
    if request.url.query:
        url += "?" + request.url.query
    signature = request.headers.get("x-twilio-signature", "")
    if not signature_is_valid(settings.twilio_auth_token or "", url, fields, signature):
        raise InvalidTwilioSignature()
    return {key: value[:MAX_FIELD_CHARS] for key, value in fields.items()}


TwilioForm = Annotated[dict[str, str], Depends(twilio_form)]


def twiml(body: str = EMPTY_TWIML) -> Response:
    return Response(body, media_type="text/xml")


@router.post(TWILIO_STATUS_PATH, include_in_schema=False)
def twilio_status(form: TwilioForm, session: SessionDep) -> Response:
    """MessageSid and MessageStatus: a final status moves its receipt."""
    message_id = form.get("MessageSid") or form.get("SmsSid") or ""
    status = (form.get("MessageStatus") or form.get("SmsStatus") or "").lower()
    if message_id:
        record_delivery_status(session, message_id=message_id, status=status)
    return twiml()
