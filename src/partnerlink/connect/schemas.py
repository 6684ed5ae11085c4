"""Request and response bodies of the consent-screen flow (partner and merchant sides)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

# Ids are short opaque strings; control characters (NUL above all, which
# PostgreSQL refuses) can never be part of one.
Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]


def timestamp(value: datetime) -> str:
    """ISO-8601 in UTC with milliseconds and `Z`, the form of SPEC.md's examples."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _example(example: dict[str, JsonValue]) -> ConfigDict:
    return ConfigDict(json_schema_extra={"examples": [example]})


def example_of(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entry showing the model's example as the 200 answer."""
    extra = model.model_config.get("json_schema_extra")
    example = extra["examples"][0] if isinstance(extra, dict) else None  # type: ignore[index]
    return {200: {"content": {"application/json": {"example": example}}}}


class IntegrationTokenCreated(BaseModel):
    model_config = _example(
        {"integrationToken": "plk_it_87aKzzGc8Q2SPcaCUv92xOrEomcQMlARlPAdDpCCyXU", "success": True}
    )

    integrationToken: str = Field(description="Opaque; `pending` for its 1-hour lifetime.")
    success: bool = True


class IntegrationStatus(BaseModel):
    model_config = _example({"status": "pending", "success": True})

    status: Literal["pending", "finished", "cancelled"] = Field(
        description="`cancelled` also for a token whose lifetime ran out before approval."
    )
    success: bool = True


class ExchangedTokens(BaseModel):
    model_config = _example(
        {
            "accessToken": "plk_at_hhcALM8wiqWRvvwVstYRfHIluWSqRIXVw9vxXoPiJLw",
            "refreshToken": "plk_rt__O7vEvrWwvu0IUmeJo7zw0hRoxhhGYIWQ1aggO3HVIU",
            "expiration": "2026-05-01T12:00:00.000Z",
            "success": True,
            "ereceipt": False,
        }
    )

    accessToken: str = Field(description="Store access token; send as `Authorization: Bearer`.")
    refreshToken: str = Field(description="Returned only here; keep it like a password.")
    expiration: str = Field(description="ISO-8601 expiry of the access token (1 year).")
    success: bool = True
    ereceipt: bool = Field(
        description="True when the partner offers e-receipts and the merchant opted in: "
        "prompt for the customer's phone number at checkout."
    )


class RefreshedToken(BaseModel):
    model_config = _example(
        {
            "accessToken": "plk_at_qPObWX8bbeF4oqpkNMb9DPeVWoqTmsWdHwfwnN8vUR0",
            "expiration": "2026-05-02T09:15:00.000Z",
            "success": True,
        }
    )

    accessToken: str
    expiration: str = Field(description="ISO-8601 expiry of the new access token.")
    success: bool = True


class ApproveConsentIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientId: Id
    profileId: Id | None = None
    storeId: Id | None = None
    greenInvoices: bool = False


class DeclineConsentIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientId: Id
