"""Request bodies of the merchant JSON API (CONTRACT.md §4).

Types are strict (a number is not a name); the rules on values live in service.py,
so the console and the API refuse the same things with the same messages.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr


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
