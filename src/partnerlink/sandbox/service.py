"""A sandbox partner's test stores and test events.

Each sandbox partner gets a sandbox merchant of its own (an account nobody signs
in to: its password is random and never shown) with one profile; the endpoint's
test stores are made there and a pairing code is reserved for each exactly as a
merchant reserves one, so a partner runs the whole pairing flow with no merchant.
A sandbox partner connects only test stores, made as such (here, or by a consent
approved with a profile); a real store never turns into a test one (CONTRACT §12).
Test stores' texts are recorded and never sent (receipts/tasks.py), and their
orders and the customers known only from them stay out of results and audiences.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.merchant.accounts import sandbox_merchant
from partnerlink.merchant.models import Profile
from partnerlink.merchant.profiles import create_profile
from partnerlink.pairing.service import ReservedCode, reserve_test_store_code
from partnerlink.partners.models import Partner
from partnerlink.problems import BadRequest, Forbidden
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.stores.service import create_store
from partnerlink.webhooks import events

SANDBOX_EMAIL_DOMAIN = "sandbox.partnerlink.invalid"  # .invalid: never a real mailbox


class NotSandbox(Forbidden):
    code = "not_sandbox"
    detail = "Only a sandbox partner (partnerlink partners create --sandbox) may use /v1/sandbox."


class NoWebhookUrl(BadRequest):
    code = "no_webhook_url"
    detail = (
        "This partner has no webhook URL: partnerlink partners update CLIENT_ID --webhook-url URL."
    )


def require_sandbox(partner: Partner) -> None:
    if not partner.sandbox:
        raise NotSandbox()


def _sandbox_profile(session: Session, partner: Partner) -> Profile:
    merchant = sandbox_merchant(
        session, email=f"{partner.id}@{SANDBOX_EMAIL_DOMAIN}", name=f"{partner.name} sandbox"
    )
    profile = session.scalar(select(Profile).where(Profile.merchant_id == merchant.id))
    if profile is None:
        profile = create_profile(session, merchant_id=merchant.id, name=f"{partner.name} sandbox")
    return profile


def test_store_with_code(
    session: Session, settings: Settings, *, partner: Partner
) -> tuple[Store, ReservedCode]:
    """A new test store in the partner's sandbox profile, and a pairing code reserved for it."""
    require_sandbox(partner)
    profile = _sandbox_profile(session, partner)
    count = session.scalar(
        select(func.count()).select_from(Store).where(Store.profile_id == profile.id)
    )
    store = create_store(
        session,
        profile_id=profile.id,
        name=f"Test store {int(count or 0) + 1}",
        country_code="US",
        currency="USD",
        green_invoices=partner.ereceipt,
        manual=True,
        is_test=True,
    )
    reserved = reserve_test_store_code(session, settings=settings, store=store, partner=partner)
    return store, reserved


def send_test_event(session: Session, *, partner: Partner, event_type: str) -> str:
    """A test event of the type, with made-up data shaped like the real one's."""
    require_sandbox(partner)
    if not partner.webhook_url:
        raise NoWebhookUrl()
    if event_type not in events.EVENT_TYPES:
        raise BadRequest(
            f"type must be one of {', '.join(events.EVENT_TYPES)}",
            code="invalid_field",
            errors=[{"field": "type", "message": "unknown event type"}],
        )
    store_id = "test-store"
    samples: dict[str, dict[str, Any]] = {
        events.CONNECTION_REVOKED: {
            "connectionId": "test-connection",
            "storeId": store_id,
            "reason": "merchant",
        },
        events.STORE_SETTINGS_UPDATED: {"storeId": store_id, "greenInvoices": True},
        events.UPLOAD_FINISHED: {
            "uploadId": "test-upload",
            "storeId": store_id,
            "status": "done",
            "records": 3,
            "created": 2,
            "updated": 1,
            "unchanged": 0,
            "rejected": 0,
        },
    }
    event_id = events.record_event(
        session,
        partner_id=partner.id,
        connection_id=None,
        event_type=event_type,
        data=samples[event_type],
    )
    assert event_id is not None  # the partner has a URL
    return event_id
