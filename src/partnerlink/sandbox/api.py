"""`POST /v1/sandbox/pairing-codes` and `POST /v1/sandbox/webhooks` (CONTRACT.md §9)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from partnerlink.connect.api import CREDENTIALS_REFUSED, ClientId, ClientSecret, client_partner
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.problems import RateLimited, field_problem, problem_responses
from partnerlink.sandbox.schemas import SandboxCode, SandboxEvent
from partnerlink.sandbox.service import send_test_event, test_store_with_code
from partnerlink.security.rate_limit import FailureBudget

router = APIRouter(prefix="/sandbox", tags=["Sandbox"])

# Test stores are cheap to ask for and never cleaned up: bounded per partner.
TEST_STORES_PER_PARTNER = "200/hour"


@router.post(
    "/pairing-codes",
    summary="A test store and its pairing code (sandbox partners)",
    description=(
        "Creates a test store in your sandbox and reserves a pairing code for it, as a "
        "merchant would: redeem it with POST /v1/auth/integration/pair. Test stores' texts "
        f"are recorded, never sent. At most {TEST_STORES_PER_PARTNER} per partner."
    ),
    response_model=SandboxCode,
    responses=problem_responses(*CREDENTIALS_REFUSED),
)
def sandbox_pairing_code(
    session: SessionDep, settings: SettingsDep, client_id: ClientId, client_secret: ClientSecret
) -> SandboxCode:
    partner = client_partner(session, client_id, client_secret)
    budget = FailureBudget(
        "sandbox-test-stores", TEST_STORES_PER_PARTNER, settings.rate_limit_storage
    )
    if partner.sandbox and budget.exhausted(partner.id):
        raise RateLimited(budget.retry_after_seconds(partner.id))
    store, reserved = test_store_with_code(session, settings, partner=partner)
    budget.record_failure(partner.id)  # counts every test store made
    return SandboxCode(
        code=reserved.code,
        storeId=store.id,
        expiresAt=reserved.expires_at.isoformat().replace("+00:00", "Z"),
    )


@router.post(
    "/webhooks",
    summary="Send a test webhook event (sandbox partners)",
    description=(
        "Queues a test event of `type` (connection.revoked, store.settings.updated, "
        "customers.upload.finished) to your webhook URL, signed like every event."
    ),
    response_model=SandboxEvent,
    responses=problem_responses(field_problem("type", "unknown event type"), *CREDENTIALS_REFUSED),
)
def sandbox_webhook(
    session: SessionDep,
    client_id: ClientId,
    client_secret: ClientSecret,
    event_type: Annotated[str, Query(alias="type", description="The event type to send.")],
) -> SandboxEvent:
    partner = client_partner(session, client_id, client_secret, type=event_type)
    return SandboxEvent(eventId=send_test_event(session, partner=partner, event_type=event_type))
