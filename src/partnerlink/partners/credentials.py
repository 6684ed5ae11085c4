"""Client credentials as a /v1 route takes them: `?client_id&client_secret` (SPEC.md).

The same parameters and checks as connect's routes (connect/api.py, whose copy can
come here): a blank parameter is 400 `missing_field`, a wrong id or secret alike
403 `invalid_credentials` (CONTRACT.md §3). For routes of packages below connect.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner
from partnerlink.partners.service import authenticate_partner
from partnerlink.problems import InvalidCredentials, ValidationFailed, field_problem

CREDENTIALS_REFUSED = (field_problem("client_id", "required"), InvalidCredentials)

ClientId = Annotated[str, Query(description="Your client id, issued with your credentials.")]
ClientSecret = Annotated[
    str, Query(description="Your client secret. Send it from your backend only, never a device.")
]


def client_partner(session: Session, client_id: str, client_secret: str) -> Partner:
    """The partner these credentials name: 400 when one is blank, else 403 unless both hold."""
    blank = [
        name
        for name, value in (("client_id", client_id), ("client_secret", client_secret))
        if not value.strip()
    ]
    if blank:
        raise ValidationFailed(
            f"{blank[0]} is required",
            code="missing_field",
            errors=[{"field": name, "message": "required"} for name in blank],
        )
    if "\x00" in client_id:  # PostgreSQL refuses NUL in text; no client id holds one
        raise InvalidCredentials()
    return authenticate_partner(session, client_id, client_secret)
