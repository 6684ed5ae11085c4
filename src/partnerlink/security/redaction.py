"""Keeps secrets out of logs: the legacy ?access_token=, every credential query parameter,
and the path segments that are credentials (integration tokens, pre-signed upload URLs)."""

from __future__ import annotations

import logging
import re

SECRET_QUERY_PARAMS = (
    "access_token",
    "client_secret",
    "code",
    "integration_token",
    "refresh_token",
    "token",  # POST /v1/auth/revoke?token=: an access or refresh token
    "k",
    "sig",
)
_PATTERN = re.compile(
    r"(?i)([?&](?:" + "|".join(re.escape(p) for p in SECRET_QUERY_PARAMS) + r")=)[^&\s\"]*"
)

# Merchant consent routes carry the integration token in the path
# (/merchant/api/consents/{token}/...), and an upload URL is its own credential.
_PATH_PATTERN = re.compile(r"(/merchant/api/consents/|/v1/uploads/)[^/?\s\"]+")


def redact(text: str) -> str:
    # Every request is logged: skip the regular expressions when nothing could match.
    if "=" in text:
        text = _PATTERN.sub(r"\1[REDACTED]", text)
    if "/merchant/api/consents/" in text or "/v1/uploads/" in text:
        text = _PATH_PATTERN.sub(r"\1[REDACTED]", text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites log records (uvicorn's access log included) before any handler sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {
                k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()
            }
        return True


def install_log_redaction() -> None:
    """Attaches the filter to every logger that may print a request line."""
    for name in ("", "uvicorn", "uvicorn.access", "uvicorn.error", "partnerlink", "httpx"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
