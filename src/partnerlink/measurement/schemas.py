"""Request bodies of the measurement routes (CONTRACT.md §7)."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from partnerlink.measurement.touches import CAMPAIGN_ID_RULE, is_campaign_id
from partnerlink.orders.schemas import Timestamp


class CampaignIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    campaignId: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    name: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    startsAt: Timestamp
    endsAt: Timestamp | None = None
    holdoutPercent: Annotated[StrictInt, Field(ge=0, le=50)] = 0

    @field_validator("campaignId")
    @classmethod
    def _campaign_id(cls, value: str) -> str:
        if not is_campaign_id(value.strip()):
            raise ValueError(CAMPAIGN_ID_RULE)
        return value.strip()

    @model_validator(mode="after")
    def _ends_after_start(self) -> CampaignIn:
        self.name = self.name.strip()
        if not self.name:
            raise ValueError("name must not be blank")
        if self.endsAt is not None and self.endsAt <= self.startsAt:
            raise ValueError("endsAt must be after startsAt")
        return self


class TouchesIn(BaseModel):
    """Each touch is checked alone (measurement/touches.py): a bad one is rejected with its
    index while the others are imported."""

    model_config = ConfigDict(extra="ignore")

    touches: list[object]
