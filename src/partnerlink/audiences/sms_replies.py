"""Inbound texts from Twilio: STOP (and Twilio's other opt-out words) stops our
receipts to that phone and opts its customers out of audiences (CONTRACT §8, §9);
START lifts both, and only what STOP did: a merchant's own opt-out stays (§12).
Other replies are ignored. Signed like every Twilio request
(receipts/twilio_callbacks.py)."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Response

from partnerlink.audiences.choices import opt_in_phone, opt_out_phone
from partnerlink.customers.normalize import normalize_phone
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.receipts.providers import TWILIO_INBOUND_PATH, mask_phone
from partnerlink.receipts.service import reply_keyword, start_phone, stop_phone
from partnerlink.receipts.twilio_callbacks import TwilioForm, twiml
from partnerlink.security.identifier_digests import identifier_key

log = logging.getLogger("partnerlink.receipts")

router = APIRouter()


@router.post(TWILIO_INBOUND_PATH, include_in_schema=False)
def twilio_inbound(form: TwilioForm, session: SessionDep, settings: SettingsDep) -> Response:
    keyword = reply_keyword(form.get("Body"))
    phone = normalize_phone(form.get("From"), None)  # Twilio sends E.164
    if keyword is None or phone is None:
        return twiml()
    digest_key = identifier_key(settings.signing_key)
    if keyword == "stop":
        suppressed = stop_phone(session, phone, digest_key)
        opted_out = opt_out_phone(session, phone)
        log.info(
            "SMS STOP from %s: %d pending receipt(s) suppressed, %d customer(s) opted out",
            mask_phone(phone),
            suppressed,
            opted_out,
        )
    else:
        start_phone(session, phone, digest_key)
        opted_in = opt_in_phone(session, phone)
        log.info("SMS START from %s: %d customer(s) opted in again", mask_phone(phone), opted_in)
    return twiml()
