"""Request and response shapes of the customers endpoints (for validation and /docs), and
the merchant API's customer."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from partnerlink.customers.models import Customer, Upload
from partnerlink.customers.uploads import MAX_REPORTED_ERRORS


class UploadUrlOut(BaseModel):
    uploadUrl: str = Field(
        description="Pre-signed, single-use URL: PUT the JSON array of customer records to it "
        "(no Authorization header). Valid for PARTNERLINK_UPLOAD_URL_TTL_SECONDS (900 s)."
    )


class CustomerRecord(BaseModel):
    """One element of the uploaded array; each carries whatever identifiers the partner has."""

    email: str | None = Field(None, description="Primary match key.", examples=["ann@example.com"])
    phoneNumber: str | None = Field(
        None,
        description="Fallback match key; E.164 preferred, else read in the store's country.",
        examples=["+14155552671"],
    )
    firstName: str | None = None
    lastName: str | None = None
    city: str | None = None
    countryCode: str | None = Field(None, examples=["US"])
    postalCode: str | None = Field(
        None,
        max_length=16,
        description="Stored trimmed; a match key for Google's audiences.",
        examples=["94105"],
    )


UploadStatus = Literal["received", "processing", "done", "failed"]


class UploadReceivedOut(BaseModel):
    uploadId: str
    status: UploadStatus


class RecordError(BaseModel):
    index: int = Field(description="Position of the record in the array, from 0.")
    reason: str
    field: str | None = Field(
        None, description="With a warning: the field whose value the record was kept without."
    )
    severity: Literal["warning"] | None = Field(
        None,
        description="`warning`: the record was kept (counted as created, updated or "
        "unchanged) without the field's value, e.g. a phoneNumber that does not parse. "
        "Absent: the record was rejected.",
    )


class UploadStatusOut(BaseModel):
    uploadId: str
    status: UploadStatus
    records: int = Field(description="Records read so far.")
    created: int
    updated: int
    unchanged: int
    rejected: int
    errors: list[RecordError] = Field(
        description="The first 20 rejected records and warnings, in the array's order."
    )
    reason: str | None = Field(None, description="Why the file failed (only when `failed`).")


def customer_json(customer: Customer) -> dict[str, Any]:
    """The merchant API's shape of a customer: exactly CONTRACT.md §4's fields (the optional
    postalCode shows in a person's data export, which holds everything)."""
    return {
        "id": str(customer.id),
        "email": customer.email,
        "phoneNumber": customer.phone_number,
        "firstName": customer.first_name,
        "lastName": customer.last_name,
        "city": customer.city,
        "countryCode": customer.country_code,
    }


def upload_status_json(upload: Upload) -> dict[str, Any]:
    """The status body of CONTRACT.md §6."""
    body: dict[str, Any] = {
        "uploadId": upload.id,
        "status": upload.status,
        "records": upload.records,
        "created": upload.created,
        "updated": upload.updated,
        "unchanged": upload.unchanged,
        "rejected": upload.rejected,
        "errors": list(upload.errors or [])[:MAX_REPORTED_ERRORS],
    }
    if upload.status == "failed":
        body["reason"] = upload.failure_reason
    return body
