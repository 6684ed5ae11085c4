"""Request and response shapes of the pairing routes (SPEC.md endpoint 5; the merchant API's
reservation of a code)."""

from __future__ import annotations

import math
from datetime import datetime

from pydantic import BaseModel, Field, field_validator


class PairRequest(BaseModel):
    code: int = Field(
        description="The 6-digit pairing code shown in the merchant app, as a JSON number."
    )

    @field_validator("code", mode="before")
    @classmethod
    def _whole_json_number(cls, value: object) -> object:
        # SPEC.md: sent as a JSON number. A string, a boolean or a fraction is malformed.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a JSON number")
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise ValueError("must be a whole number")
            return int(value)
        return value


PAIRED_EXAMPLE = {
    "access_token": "plk_at_6aB4deFpKCrq7vRffihCQeLxFU0-8MKZnHML3uKblz8",
    "storeId": "0b6f4c1e-8d55-4a8e-9a38-2f1f0f4f6a11",
    "posType": "acme-pos",
    "success": True,
}


class PairResponse(BaseModel):
    access_token: str = Field(description="Durable store access token; send it as a Bearer token.")
    storeId: str = Field(description="The store the code was reserved for.")
    posType: str | None = Field(
        description="The store's POS type; null when the store's type was never registered."
    )
    success: bool = True


class ReservationRequest(BaseModel):
    posType: str = Field(description="posType of the partner whose terminal will redeem the code.")


class ReservationResponse(BaseModel):
    code: int
    expiresAt: datetime
    posType: str
