"""Every setting of CONTRACT.md §2, read from the environment and `.env`."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from email.utils import parseaddr
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DATA_DIR = Path("data")
# Set by `partnerlink serve` for its server processes (not in tests' in-process apps).
SERVER_PROCESS_ENV = "PARTNERLINK_SERVER_PROCESS"
# Alerts' sender when PARTNERLINK_MAIL_FROM is unset (most mail servers want their own).
DEFAULT_MAIL_FROM = "PartnerLink <noreply@localhost>"


class Settings(BaseSettings):
    # A refused value is not echoed in the error: some settings hold a password or token.
    model_config = SettingsConfigDict(
        env_prefix="PARTNERLINK_",
        env_file=".env",
        extra="ignore",
        frozen=False,
        hide_input_in_errors=True,
    )

    database_url: str = f"sqlite:///./{DATA_DIR}/partnerlink.db"
    # A PostgreSQL hot standby for the heavy reads (results, lift, audiences, exports, the
    # ad-platform sync's segment reads); unset, they read the primary. Writes never go there.
    database_read_url: str | None = None
    public_url: str = "http://127.0.0.1:8000"
    connect_url: str | None = None
    receipt_url: str | None = None
    secret_key: str | None = None
    data_dir: Path = DATA_DIR
    upload_dir: Path | None = None

    integration_token_ttl_seconds: int = Field(3600, gt=0)
    pairing_code_ttl_seconds: int = Field(259200, gt=0)
    access_token_ttl_seconds: int = Field(31536000, gt=0)
    upload_url_ttl_seconds: int = Field(900, gt=0)
    merchant_session_ttl_seconds: int = Field(12 * 3600, gt=0)
    consent_form_ttl_seconds: int = Field(1800, gt=0)
    # CONTRACT §13: an OAuth authorization code's lifetime.
    oauth_code_ttl_seconds: int = Field(60, gt=0)
    max_upload_bytes: int = Field(1073741824, gt=0)
    max_body_bytes: int = Field(1048576, gt=0)

    sms_provider: Literal["outbox", "twilio"] = "outbox"
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = None
    twilio_from: str | None = None
    twilio_api_url: str = "https://api.twilio.com"

    # New campaigns' click window (CONTRACT.md §16: 1-90 days); each campaign keeps its own.
    attribution_window_days: int = Field(7, ge=1, le=90)
    rate_limit_storage: str = "memory://"
    pairing_failures_per_ip: str = "10/10minutes"
    pairing_failures_global: str = "1000/hour"
    # CONTRACT §13: every partner's requests a minute, unless `partners update` set its own.
    partner_requests_per_minute: int = Field(60000, gt=0)
    trusted_proxies: str = ""
    run_worker: bool = True
    worker_poll_seconds: float = Field(0.5, gt=0)
    # Orders queued up this deep are journaled and answered, then applied in batches
    # (orders/intake/journal.py); 0 stores every order before answering.
    orders_journal_at: int = Field(2, ge=0)
    # A crashed worker's upload is taken over once its lease (renewed every batch) runs out.
    upload_lease_seconds: int = Field(30, gt=0)

    # CONTRACT §10: operation on many machines.
    upload_storage: str = "file"
    s3_endpoint_url: str | None = None
    log_format: Literal["text", "json"] = "text"

    # CONTRACT §9: webhooks.
    webhook_retry_seconds: float = Field(10.0, gt=0)
    webhook_allow_private: bool = False

    # The audiences list (CONTRACT §8, docs/audiences.md): a large profile (its exact count
    # took half a second or more) answers its stored count while it is younger than this
    # (the worker counts again at half that age); 0: every list counted on every request.
    audience_sizes_max_age_seconds: int = Field(300, ge=0)

    # CONTRACT §11: ad platforms (tests point the URLs at local servers).
    meta_graph_url: str = "https://graph.facebook.com"
    meta_api_version: str = "v24.0"
    google_datamanager_url: str = "https://datamanager.googleapis.com"
    google_token_url: str = "https://oauth2.googleapis.com/token"
    # CONTRACT §14: the operator's Meta app and Google OAuth client (unset: no button).
    meta_app_id: str | None = None
    meta_app_secret: str | None = None
    meta_dialog_url: str = "https://www.facebook.com"
    google_client_id: str | None = None
    google_client_secret: str | None = None
    google_auth_url: str = "https://accounts.google.com/o/oauth2/v2/auth"
    ad_sync_seconds: float = Field(900, gt=0)
    # CONTRACT §11: the wait before a destination's first retry (429, 5xx, timeout,
    # refused connection), doubling up to an hour, never sooner than Retry-After.
    ad_retry_seconds: float = Field(30, gt=0)
    # Each platform request's read/write limit: a hanging platform holds one sync thread
    # for at most this long (tests shorten it).
    ad_request_timeout_seconds: float = Field(30, gt=0)
    # CONTRACT §15: alerts by email. smtp://user:pass@host:587 (STARTTLS) or smtps://
    # (unset: no email, the console's banner alone). Kept out of repr: it holds a password.
    smtp_url: str | None = Field(None, repr=False)
    mail_from: str | None = None  # unset: DEFAULT_MAIL_FROM
    # Each SMTP step's limit: a mail server that hangs holds the alert sender this long.
    smtp_timeout_seconds: float = Field(10, gt=0)
    # A destination with no successful sync for this long is reported stale.
    ad_stale_hours: float = Field(24, gt=0)

    @field_validator("database_url", "database_read_url")
    @classmethod
    def _use_psycopg3(cls, url: str | None) -> str | None:
        # Operators write postgresql://; SQLAlchemy would pick psycopg2, which we do not ship.
        if url is None:
            return None
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @field_validator("pairing_failures_per_ip", "pairing_failures_global")
    @classmethod
    def _valid_rate_limit(cls, value: str) -> str:
        # Refuse a typo at start-up rather than with a 500 on the first redemption.
        from limits import parse

        try:
            parse(value)
        except ValueError as error:
            raise ValueError(f"not a rate limit like '10/10minutes': {value!r}") from error
        return value

    @field_validator("upload_storage")
    @classmethod
    def _valid_upload_storage(cls, value: str) -> str:
        # Refuse a typo at start-up rather than with a 500 on the first upload.
        parts = urlsplit(value)
        if value != "file" and (parts.scheme != "s3" or not parts.netloc):
            raise ValueError(f"expected 'file' or s3://bucket/prefix, not {value!r}")
        return value

    @field_validator("smtp_url")
    @classmethod
    def _valid_smtp_url(cls, url: str | None) -> str | None:
        # Refuse a typo at start-up; the message never repeats the URL (its password).
        if not url:
            return None
        parts = urlsplit(url)
        try:
            parts.port  # noqa: B018 (raises on a port that is not a number)
        except ValueError:
            raise ValueError("the SMTP URL's port is not a number") from None
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("expected smtp://[user:password@]host[:port] or smtps://...")
        return url

    @field_validator("mail_from")
    @classmethod
    def _valid_mail_from(cls, value: str | None) -> str | None:
        if not value:
            return None
        if "@" not in parseaddr(value)[1] or any(c in value for c in "\r\n"):
            raise ValueError(
                f"expected an address like 'PartnerLink <alerts@example.com>': {value!r}"
            )
        return value

    @field_validator(
        "public_url",
        "connect_url",
        "receipt_url",
        "meta_graph_url",
        "google_datamanager_url",
        "meta_dialog_url",
    )
    @classmethod
    def _strip_slash(cls, url: str | None) -> str | None:
        return url.rstrip("/") if url else url

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def effective_connect_url(self) -> str:
        return self.connect_url or f"{self.public_url}/connect"

    @property
    def effective_receipt_url(self) -> str:
        return self.receipt_url or f"{self.public_url}/receipts"

    @property
    def effective_mail_from(self) -> str:
        return self.mail_from or DEFAULT_MAIL_FROM

    @property
    def effective_upload_dir(self) -> Path:
        return self.upload_dir or self.data_dir / "uploads"

    @property
    def trusted_proxy_set(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.trusted_proxies.split(",") if p.strip())

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        # pydantic copies the instance's __dict__, cached properties included: a copy with
        # another secret_key would otherwise keep signing with the original's key.
        copy = super().model_copy(update=update, deep=deep)
        copy.__dict__.pop("signing_key", None)
        return copy

    @cached_property
    def signing_key(self) -> bytes:
        """The key behind upload URLs, form tokens and receipt keys.

        Generated once and kept in data/secret.key so that a restart does not
        invalidate links already handed out.
        """
        if self.secret_key:
            return self.secret_key.encode()
        key_file = self.data_dir / "secret.key"
        if not key_file.exists():
            key_file.parent.mkdir(parents=True, exist_ok=True)
            key_file.write_text(secrets.token_urlsafe(48))
            key_file.chmod(0o600)
        return key_file.read_text().strip().encode()


def get_settings() -> Settings:
    return Settings()
