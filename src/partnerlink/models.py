"""Imports every domain's models so that one metadata describes the whole schema.

The model registry for Alembic (migrations/env.py): the one module that sees
every domain's tables, so that `db` itself imports no domain."""

from partnerlink.audiences.models import OptOut, StoredSizes, Suppression
from partnerlink.connect.models import IntegrationToken
from partnerlink.customers.models import Customer, Upload
from partnerlink.db.base import Base
from partnerlink.destinations.ad_connections.models import AdConnection, AdConnectionState
from partnerlink.destinations.models import Destination, DestinationConversion, DestinationMember
from partnerlink.idempotency.models import IdempotencyKey
from partnerlink.measurement.models import Campaign
from partnerlink.merchant.models import Merchant, MerchantSession, Profile
from partnerlink.orders.models import Order, Touch
from partnerlink.pairing.models import PairingCode
from partnerlink.partners.models import Partner, PartnerQuota
from partnerlink.receipts.models import Receipt, SmsStop
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection, Token
from partnerlink.webhooks.models import WebhookEvent

__all__ = [
    "AdConnection",
    "AdConnectionState",
    "Base",
    "Campaign",
    "Connection",
    "Customer",
    "Destination",
    "DestinationConversion",
    "DestinationMember",
    "IdempotencyKey",
    "IntegrationToken",
    "Merchant",
    "MerchantSession",
    "OptOut",
    "Order",
    "PairingCode",
    "Partner",
    "PartnerQuota",
    "Profile",
    "Receipt",
    "SmsStop",
    "Store",
    "StoredSizes",
    "Suppression",
    "Token",
    "Touch",
    "Upload",
    "WebhookEvent",
]
