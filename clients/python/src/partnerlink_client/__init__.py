"""PartnerLink's partner API from Python: both connection flows, every /v1 endpoint,
SPEC's handling rules, webhook verification.

    from partnerlink_client import PartnerLinkClient

    with PartnerLinkClient("https://partnerlink.example.com") as pl:
        pl.pair(482913)                      # the code the merchant read out
        pl.put_store({"storeName": "Bistro", "storeAddress": "1 Main St", "storeCountryCode": "US"})
        pl.send_order({...})
"""

from partnerlink_client.calls import Tokens
from partnerlink_client.client import AsyncPartnerLinkClient, PartnerLinkClient
from partnerlink_client.errors import (
    BadRequest,
    ConnectionFailed,
    Forbidden,
    Gone,
    NotFound,
    PartnerLinkError,
    RateLimited,
    ServerError,
    Unauthorized,
)
from partnerlink_client.oauth import Authorization, AuthorizationFailed
from partnerlink_client.policy import RetryPolicy
from partnerlink_client.webhooks import InvalidSignature, verify_standard_webhook, verify_webhook

__all__ = [
    "AsyncPartnerLinkClient",
    "Authorization",
    "AuthorizationFailed",
    "BadRequest",
    "ConnectionFailed",
    "Forbidden",
    "Gone",
    "InvalidSignature",
    "NotFound",
    "PartnerLinkClient",
    "PartnerLinkError",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "Tokens",
    "Unauthorized",
    "verify_standard_webhook",
    "verify_webhook",
]
