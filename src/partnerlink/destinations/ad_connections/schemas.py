"""The ad connections' replies: a connection as the merchant API and the console show it."""

from __future__ import annotations

from partnerlink.destinations.ad_connections.models import AdConnection


def connection_json(connection: AdConnection) -> dict[str, object]:
    expires = connection.expires_at
    return {
        "id": connection.id,
        "platform": connection.platform,
        "accountName": connection.account_name,
        "expiresAt": expires.isoformat() if expires is not None else None,
    }
