"""Upload URLs and the upload life cycle as the partner sees it (CONTRACT.md §6).

An upload URL is `{public_url}/v1/uploads/{store_id}.{connection_id}.{nonce}.{expires}.{signature}`:
it names the store, the connection that asked for it (its partner hears when the
upload finishes), a random single-use nonce and its expiry, signed with the
service key, so it needs no other credential and no row until it is used.
The nonce is unique among uploads, which makes a second PUT fail (403
`upload_url_used`), even when two arrive at once.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from partnerlink.customers import queries
from partnerlink.customers.models import Upload
from partnerlink.kit.text import storable_text
from partnerlink.problems import BadRequest, Forbidden, NotFound
from partnerlink.security.secrets import sign, verify_signature
from partnerlink.settings import Settings

UPLOAD_URL_PATH = "/v1/uploads/"
_SIGNING_CONTEXT = "customer-upload:"
_TOKEN_RE = re.compile(
    r"([0-9A-Za-z-]{1,64})\.([0-9A-Za-z-]{1,64})\.([0-9A-Za-z_-]{16,64})\.([0-9]{1,12})"
    r"\.([0-9A-Za-z_-]{43})"
)
MAX_REPORTED_ERRORS = 20


class InvalidUploadUrl(Forbidden):
    code = "invalid_upload_url"
    detail = "This upload URL is not valid; request a new one with GET /v1/customers."


class UploadUrlExpired(Forbidden):
    code = "upload_url_expired"
    detail = "This upload URL has expired; request a new one with GET /v1/customers."


class UploadUrlUsed(Forbidden):
    code = "upload_url_used"
    detail = "This upload URL was already used; request a new one with GET /v1/customers."


class UploadInterrupted(BadRequest):
    code = "upload_interrupted"
    detail = "The upload was interrupted."


@dataclass(frozen=True)
class UploadGrant:
    """What a verified upload URL allows: one file for one store."""

    store_id: str
    connection_id: str
    nonce: str
    expires_at: int


def issue_upload_url(*, settings: Settings, store_id: str, connection_id: str) -> str:
    """Signs a single-use upload URL for the store, valid for the configured lifetime."""
    nonce = secrets.token_urlsafe(18)
    expires_at = int(time.time()) + settings.upload_url_ttl_seconds
    payload = f"{store_id}.{connection_id}.{nonce}.{expires_at}"
    signature = sign(settings.signing_key, _SIGNING_CONTEXT + payload)
    return f"{settings.public_url}{UPLOAD_URL_PATH}{payload}.{signature}"


def verify_upload_token(*, settings: Settings, token: str) -> UploadGrant:
    """Checks the signature, then the expiry; raises 403 problems otherwise."""
    match = _TOKEN_RE.fullmatch(token)
    if match is None:
        raise InvalidUploadUrl()
    store_id, connection_id, nonce, expires, signature = match.groups()
    payload = f"{store_id}.{connection_id}.{nonce}.{expires}"
    if not verify_signature(settings.signing_key, _SIGNING_CONTEXT + payload, signature):
        raise InvalidUploadUrl()
    if time.time() >= int(expires):
        raise UploadUrlExpired()
    return UploadGrant(
        store_id=store_id, connection_id=connection_id, nonce=nonce, expires_at=int(expires)
    )


class UploadConnectionRevoked(InvalidUploadUrl):
    detail = "The connection this upload URL was issued to is revoked."


def ensure_upload_url_usable(session: Session, *, grant: UploadGrant) -> None:
    """Refuses a used URL, or one whose connection is revoked, before its body is read
    (the unique nonce decides races; `record_upload` checks the connection again)."""
    if queries.nonce_used(session, nonce=grant.nonce):
        raise UploadUrlUsed()
    _ensure_connection_live(session, grant)


def _ensure_connection_live(session: Session, grant: UploadGrant) -> None:
    """An upload URL dies with its connection (CONTRACT.md §12): a revoked partner may no
    longer write to the store's customers, even through a URL it fetched before."""
    if not queries.connection_live(
        session, connection_id=grant.connection_id, store_id=grant.store_id
    ):
        raise UploadConnectionRevoked()


def upload_storage_key(*, grant: UploadGrant, upload_id: str) -> str:
    return f"{grant.store_id}/{upload_id}.json"


def record_upload(
    session: Session, *, grant: UploadGrant, upload_id: str, storage_key: str, size_bytes: int
) -> Upload:
    """Records a durably stored file as `received`, consuming the URL's nonce.

    The connection is checked again: it may have been revoked while the body arrived.
    """
    profile_id = queries.store_profile_id(session, store_id=grant.store_id)
    if profile_id is None:
        raise InvalidUploadUrl("The store of this upload URL no longer exists.")
    _ensure_connection_live(session, grant)
    upload = Upload(
        id=upload_id,
        nonce=grant.nonce,
        store_id=grant.store_id,
        connection_id=grant.connection_id,
        profile_id=profile_id,
        status="received",
        storage_key=storage_key,
        size_bytes=size_bytes,
        errors=[],
    )
    try:
        with session.begin_nested():
            session.add(upload)
    except IntegrityError as error:
        raise UploadUrlUsed() from error
    return upload


def upload_status(session: Session, *, store_id: str, partner_id: str, upload_id: str) -> Upload:
    """The upload of CONTRACT.md §6's status; another store's upload answers 404, and so does
    another partner's on a shared store: only the partner whose connection got the URL."""
    # An id no upload can have is not sent to the database (PostgreSQL refuses NUL: a 500).
    known_shape = len(upload_id) <= 64 and storable_text(upload_id)
    found = queries.upload_and_partner(session, upload_id=upload_id) if known_shape else None
    if found is None or found[0].store_id != store_id or found[1] != partner_id:
        raise NotFound("No such upload.")
    upload: Upload = found[0]
    return upload
