"""The destination request bodies as the merchant API's OpenAPI document shows them
(CONTRACT.md §11).

These models describe; they validate nothing. The routes take the bodies as sent and
`schemas.destination_request` / `service.change` check them field by field, by the
rules of the request's platform and kind, so that a refusal names every bad field with
`invalid_field` in PartnerLink's words.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from partnerlink.audiences.queries import SEGMENTS
from partnerlink.destinations.schemas import CUSTOMER_ID, MAX_DIGITS, MAX_SECRET


def _digits_field() -> Any:
    return Field(pattern=rf"^[0-9]{{1,{MAX_DIGITS}}}$")


def _customer_field(default: Any = ...) -> Any:
    return Field(
        default,
        pattern=rf"^(?:{CUSTOMER_ID.pattern})$",
        description="A Google Ads customer id: 10 digits, 1234567890 or 123-456-7890 "
        "(stored without the dashes).",
    )


def _secret_field() -> Any:
    # Printable ASCII: what an HTTP header carries (printable_ascii).
    return Field(min_length=1, max_length=MAX_SECRET, pattern=r"^[ -~]+$")


def _segment_field() -> Any:
    return Field(
        None,
        description="Audience only: the segment the audience follows.",
        json_schema_extra={"enum": [*SEGMENTS, None]},
    )


def _campaign_field() -> Any:
    return Field(None, description="Audience only: leaves that campaign's control group out.")


class _Described(BaseModel):
    model_config = ConfigDict(field_title_generator=lambda name, _info: name)


Consent = Literal["granted", "denied"]


class MetaCredentials(_Described):
    """Meta: a system user's access token (ads_management for an audience)."""

    accessToken: str = _secret_field()


class GoogleCredentials(_Described):
    """Google: an OAuth client and a refresh token of the Google Ads account."""

    clientId: str = _secret_field()
    clientSecret: str = _secret_field()
    refreshToken: str = _secret_field()


class MetaAudienceTarget(_Described):
    """Meta, audience: a customer-list Custom Audience."""

    audienceId: str = _digits_field()


class MetaSalesTarget(_Described):
    """Meta, conversions: the dataset (pixel) the sales go to."""

    datasetId: str = _digits_field()


class GoogleAudienceTarget(_Described):
    """Google, audience: a Customer Match user list, through a manager account or not."""

    customerId: str = _customer_field()
    userListId: str = _digits_field()
    loginCustomerId: str | None = _customer_field(None)


class GoogleSalesTarget(_Described):
    """Google, conversions: a store-sales conversion action."""

    customerId: str = _customer_field()
    conversionActionId: str = _digits_field()
    loginCustomerId: str | None = _customer_field(None)


class GoogleConsent(_Described):
    """What the merchant's customers agreed to, sent as Google's request-level consent."""

    adUserData: Consent
    adPersonalization: Consent


class DestinationRequestIn(_Described):
    """A destination to connect (CONTRACT §11): credentials and target of its platform
    and kind; every problem answers 400 `invalid_field`, naming each field."""

    model_config = ConfigDict(
        field_title_generator=lambda name, _info: name,
        json_schema_extra={
            "examples": [
                {
                    "platform": "meta",
                    "kind": "audience",
                    "segment": "buyers",
                    "credentials": {"accessToken": "EAAG..."},
                    "target": {"audienceId": "23851234567890123"},
                },
                {
                    "platform": "google",
                    "kind": "conversions",
                    "credentials": {
                        "clientId": "1234567890-abc.apps.googleusercontent.com",
                        "clientSecret": "GOCSPX-...",
                        "refreshToken": "1//0g...",
                    },
                    "target": {"customerId": "123-456-7890", "conversionActionId": "777000222"},
                    "consent": {"adUserData": "granted", "adPersonalization": "denied"},
                },
            ]
        },
    )

    platform: Literal["meta", "google"]
    kind: Literal["audience", "conversions"]
    segment: str | None = _segment_field()
    campaignId: str | None = _campaign_field()
    credentials: MetaCredentials | GoogleCredentials | None = Field(
        None, description="§11's credentials, or instead `connection`."
    )
    connection: str | None = Field(
        None,
        description="The id of one of the profile's ad connections (CONTRACT §14), instead "
        "of `credentials`: the destination uses its token.",
    )
    target: MetaAudienceTarget | MetaSalesTarget | GoogleAudienceTarget | GoogleSalesTarget
    consent: GoogleConsent | None = Field(None, description="Google only.")


class DestinationChangeIn(_Described):
    """New credentials (a `needs_attention` destination goes back to `pending`), or an
    audience's new segment or campaign."""

    credentials: MetaCredentials | GoogleCredentials | None = None
    segment: str | None = _segment_field()
    campaignId: str | None = _campaign_field()
