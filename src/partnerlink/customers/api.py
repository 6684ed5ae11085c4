"""Endpoint 8 of SPEC.md: upload URLs, the upload PUT itself, and upload status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from partnerlink.customers.schemas import (
    CustomerRecord,
    UploadReceivedOut,
    UploadStatusOut,
    UploadUrlOut,
    upload_status_json,
)
from partnerlink.customers.storage import UploadTooLarge
from partnerlink.customers.storage.configured import upload_storage
from partnerlink.customers.uploads import (
    InvalidUploadUrl,
    UploadInterrupted,
    UploadUrlExpired,
    UploadUrlUsed,
    ensure_upload_url_usable,
    issue_upload_url,
    record_upload,
    upload_status,
    upload_storage_key,
    verify_upload_token,
)
from partnerlink.db.base import new_id
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.problems import (
    InvalidToken,
    NotFound,
    PayloadTooLarge,
    problem_responses,
)
from partnerlink.settings import Settings
from partnerlink.tokens.deps import CurrentStore, LegacyAccessToken

router = APIRouter(tags=["Customers"])
T = TypeVar("T")


@router.get(
    "/customers",
    response_model=UploadUrlOut,
    summary="Request an upload URL for the customer list",
    responses=problem_responses(InvalidToken),
)
def request_upload_url(
    current: CurrentStore, settings: SettingsDep, _legacy_token: LegacyAccessToken = None
) -> dict[str, Any]:
    """Answers a pre-signed, single-use URL; PUT the JSON array of customer records to it.

    The upload answers `{uploadId, status}` once the file is stored durably;
    ingestion runs in the background: poll `GET /v1/customers/uploads/{uploadId}`.
    Customers are de-duplicated by email, then phone, so re-sending a list is safe.
    """
    return {
        "uploadUrl": issue_upload_url(
            settings=settings, store_id=current.store_id, connection_id=current.connection_id
        )
    }


_UPLOAD_BODY_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "A JSON array of customer records, streamed; up to "
        "PARTNERLINK_MAX_UPLOAD_BYTES (1 GiB by default).",
        "content": {
            "application/json": {
                "schema": {"type": "array", "items": CustomerRecord.model_json_schema()}
            }
        },
    }
}


@router.put(
    "/uploads/{token}",
    response_model=UploadReceivedOut,
    summary="Upload the customer file to a pre-signed URL",
    responses=problem_responses(
        UploadInterrupted, InvalidUploadUrl, UploadUrlExpired, UploadUrlUsed, PayloadTooLarge
    ),
    openapi_extra=_UPLOAD_BODY_DOC,
)
async def put_upload(token: str, request: Request) -> dict[str, Any]:
    """Stores the file (streamed to disk and fsynced, or into the S3 bucket) and queues it.

    The URL itself is the credential. A used URL answers 403 `upload_url_used`,
    an expired one 403 `upload_url_expired`, a tampered one or one whose connection
    is revoked 403 `invalid_upload_url`.
    """
    settings: Settings = request.app.state.settings
    sessions: sessionmaker[Session] = request.app.state.sessionmaker
    grant = verify_upload_token(settings=settings, token=token)
    await _in_transaction(sessions, lambda s: ensure_upload_url_usable(s, grant=grant))
    too_large = PayloadTooLarge(
        f"Customer files are limited to {settings.max_upload_bytes} bytes.",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > settings.max_upload_bytes:
        raise too_large
    upload_id = new_id()
    key = upload_storage_key(grant=grant, upload_id=upload_id)
    storage = upload_storage(settings)
    try:
        size = await storage.save(key, request.stream(), max_bytes=settings.max_upload_bytes)
    except UploadTooLarge as error:
        raise too_large from error
    except ClientDisconnect as error:
        raise UploadInterrupted() from error
    try:
        await _in_transaction(
            sessions,
            lambda s: record_upload(
                s, grant=grant, upload_id=upload_id, storage_key=key, size_bytes=size
            ),
        )
    except BaseException:
        storage.delete(key)  # not recorded, so never to be ingested
        raise
    return {"uploadId": upload_id, "status": "received"}


async def _in_transaction(sessions: sessionmaker[Session], work: Callable[[Session], T]) -> T:
    """One short transaction off the event loop.

    The upload route does not take the request session: that one would hold
    SQLite's single connection for as long as the body takes to arrive.
    """

    def run() -> T:
        with sessions() as session, session.begin():
            return work(session)

    return await run_in_threadpool(run)


@router.get(
    "/customers/uploads/{uploadId}",
    response_model=UploadStatusOut,
    response_model_exclude_none=True,
    summary="Read the status of a customer upload",
    responses=problem_responses(InvalidToken, NotFound),
)
def get_upload_status(
    uploadId: str,
    current: CurrentStore,
    session: SessionDep,
    _legacy_token: LegacyAccessToken = None,
) -> dict[str, Any]:
    """Answers the upload's status and counts; only the partner that asked for the URL sees it.

    `records` counts records read so far; when `done`, it equals created +
    updated + unchanged + rejected. `errors` lists the first 20 rejected records and
    warnings (`"severity": "warning"`: a record kept without a value it gave, such as a
    phoneNumber that does not parse), in the array's order.
    """
    upload = upload_status(
        session, store_id=current.store_id, partner_id=current.partner_id, upload_id=uploadId
    )
    return upload_status_json(upload)
