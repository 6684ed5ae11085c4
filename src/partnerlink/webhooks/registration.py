"""A partner's webhook URL and signing secret (`partnerlink partners ... --webhook-url`,
`partners rotate-webhook-secret`). The secret is shown when it is made, never again."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.partners import service as partners
from partnerlink.partners.models import Partner
from partnerlink.problems import NotFound
from partnerlink.settings import Settings
from partnerlink.webhooks.addresses import checked_webhook_url
from partnerlink.webhooks.schedule import pending_due_now
from partnerlink.webhooks.signing import ROTATION_OVERLAP, new_nonce, webhook_secret


class UnknownClient(NotFound):
    code = "unknown_client"
    detail = "No partner has this client id."


@dataclass(frozen=True)
class WebhookRegistration:
    url: str
    secret: str | None  # a new secret, to show once; None when the partner keeps its own


def partner_by_client_id(session: Session, client_id: str) -> Partner:
    partner = session.scalar(select(Partner).where(Partner.client_id == client_id))
    if partner is None:
        raise UnknownClient()
    return partner


def set_webhook_url(
    session: Session, settings: Settings, *, partner: Partner, url: str
) -> WebhookRegistration:
    """Registers where the partner's events go; the secret is kept, or made if it had none.
    Its pending events are due at once, at this URL (each attempt reads the URL anew)."""
    checked = checked_webhook_url(url, allow_private=settings.webhook_allow_private)
    partners.set_webhook_url(session, partner=partner, url=checked)
    pending_due_now(session, partner.id)
    secret = None
    if not partner.webhook_secret_nonce:
        nonce = new_nonce()
        partners.set_webhook_secret(session, partner=partner, nonce=nonce, previous_until=None)
        secret = webhook_secret(settings.signing_key, nonce)
    return WebhookRegistration(checked, secret)


def rotate_webhook_secret(session: Session, settings: Settings, *, partner: Partner) -> str:
    """A new signing secret; events from now on are signed with it, and with the one it
    replaces for ROTATION_OVERLAP (two signatures in each header), so that the partner's
    receivers can change over without refusing an event. Rotating again within that time
    ends the overlap of the secret before: only the one just replaced keeps signing."""
    nonce = new_nonce()
    overlap_until = utcnow() + ROTATION_OVERLAP if partner.webhook_secret_nonce else None
    partners.set_webhook_secret(session, partner=partner, nonce=nonce, previous_until=overlap_until)
    return webhook_secret(settings.signing_key, nonce)
