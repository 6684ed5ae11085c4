"""Request bodies of the measurement routes (CONTRACT.md §7)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from partnerlink.measurement.touches import MAX_CAMPAIGN_ID
from partnerlink.orders.schemas import Timestamp


class CampaignIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    campaignId: Annotated[StrictStr, Field(min_length=1, max_length=MAX_CAMPAIGN_ID)]
    name: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    startsAt: Timestamp
    endsAt: Timestamp | None = None
    holdoutPercent: Annotated[StrictInt, Field(ge=0, le=50)] = 0

    @model_validator(mode="after")
    def _ends_after_start(self) -> CampaignIn:
        self.campaignId = self.campaignId.strip()
        self.name = self.name.strip()
        if not self.campaignId or "\x00" in self.campaignId:
            raise ValueError("campaignId must not be blank")
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
