"""Request bodies and answers of the measurement routes (CONTRACT.md §7)."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import Response
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from partnerlink.measurement.models import Campaign
from partnerlink.measurement.service import (
    CLICK_WINDOW_DAYS,
    DEFAULT_VIEW_WINDOW_DAYS,
    VIEW_WINDOW_DAYS,
    TouchBatch,
)
from partnerlink.measurement.touches import CAMPAIGN_ID_RULE, is_campaign_id
from partnerlink.orders.schemas import Timestamp

CSV_MEDIA_TYPE = "text/csv; charset=utf-8"
SHOWN_ERRORS = 20  # rejected touches named in an answer
ClickWindowDays = Annotated[StrictInt, Field(ge=CLICK_WINDOW_DAYS[0], le=CLICK_WINDOW_DAYS[1])]
ViewWindowDays = Annotated[StrictInt, Field(ge=VIEW_WINDOW_DAYS[0], le=VIEW_WINDOW_DAYS[1])]


class CampaignIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    campaignId: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    name: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    startsAt: Timestamp
    endsAt: Timestamp | None = None
    holdoutPercent: Annotated[StrictInt, Field(ge=0, le=50)] = 0
    clickWindowDays: ClickWindowDays | None = None  # None: PARTNERLINK_ATTRIBUTION_WINDOW_DAYS
    viewWindowDays: ViewWindowDays = DEFAULT_VIEW_WINDOW_DAYS

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

    def campaign_fields(self, default_click_days: int) -> dict[str, Any]:
        """`service.create_campaign`'s arguments: the merchant API and the console's form
        create a campaign from the same checked request."""
        return {
            "campaign_id": self.campaignId,
            "name": self.name,
            "starts_at": self.startsAt,
            "ends_at": self.endsAt,
            "holdout_percent": self.holdoutPercent,
            "click_window_days": self.clickWindowDays or default_click_days,
            "view_window_days": self.viewWindowDays,
        }


class CampaignWindowsIn(BaseModel):
    """PATCH .../campaigns/{campaignId}: new windows; a window left out stays as it is."""

    model_config = ConfigDict(extra="ignore")

    clickWindowDays: ClickWindowDays | None = None
    viewWindowDays: ViewWindowDays | None = None


class TouchesIn(BaseModel):
    """Each touch is checked alone (measurement/touches.py): a bad one is rejected with its
    index while the others are imported."""

    model_config = ConfigDict(extra="ignore")

    touches: list[object]


def campaign_json(campaign: Campaign) -> dict[str, Any]:
    return {
        "campaignId": campaign.campaign_id,
        "name": campaign.name,
        "startsAt": campaign.starts_at.isoformat(),
        "endsAt": campaign.ends_at.isoformat() if campaign.ends_at else None,
        "holdoutPercent": campaign.holdout_percent,
        "clickWindowDays": campaign.click_window_days,
        "viewWindowDays": campaign.view_window_days,
        "createdAt": campaign.created_at.isoformat(),
    }


def touch_batch_json(batch: TouchBatch) -> dict[str, Any]:
    """The answer of POST .../touches: counts, and the first rejected touches."""
    return {
        "imported": batch.imported,
        "duplicates": batch.duplicates,
        "rejected": len(batch.errors),
        "reclassified": batch.reclassified,
        "errors": batch.errors[:SHOWN_ERRORS],
    }


def results_csv_reply(text: str, start: date, end: date) -> Response:
    """The Results CSV as a download, named by its period (the API's and the page's)."""
    return Response(
        text,
        media_type=CSV_MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="results-{start}-{end}.csv"'},
    )
