"""Request bodies and answers of the merchant JSON API (CONTRACT.md §4).

Types are strict (a number is not a name); the rules on values live in service.py,
so the console and the API refuse the same things with the same messages.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from partnerlink.merchant.connections import StoreConnection
from partnerlink.merchant.models import Profile
from partnerlink.merchant.sessions import StartedSession


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    email: StrictStr = Field(max_length=320)
    # Bounded so that a huge body cannot make the password hash expensive.
    password: StrictStr = Field(max_length=1024)


class ProfileIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: StrictStr


class ManualStoreIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: StrictStr
    address: StrictStr
    countryCode: StrictStr
    currency: StrictStr | None = None


class StorePatchIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    greenInvoices: StrictBool


def session_json(started: StartedSession) -> dict[str, Any]:
    return {"sessionToken": started.token, "expiresAt": started.expires_at.isoformat()}


def new_profile_json(profile: Profile) -> dict[str, Any]:
    """A profile just made: it has no store yet."""
    return {"id": profile.id, "name": profile.name, "stores": []}


def connection_json(found: StoreConnection) -> dict[str, Any]:
    """A store's connection, exactly CONTRACT.md §4's members."""
    connection = found.connection
    return {
        "id": connection.id,
        "posType": found.pos_type,
        "method": connection.method,
        "createdAt": connection.created_at.isoformat(),
        "revokedAt": connection.revoked_at.isoformat() if connection.revoked_at else None,
    }


def console_connection_json(found: StoreConnection) -> dict[str, Any]:
    """The console also shows the partner's name."""
    return {**connection_json(found), "partnerName": found.partner_name}
