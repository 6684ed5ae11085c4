"""Keeps secrets out of logs: the legacy ?access_token=, every credential query parameter,
and the path segments that are credentials (integration tokens, pre-signed upload URLs)."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

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
_SECRET_NAMES = frozenset(SECRET_QUERY_PARAMS)
# A parameter's name as the request line spells it: percent-encoded or not (CONTRACT §12).
_PARAM_NAME = re.compile(r"[?&;]([^=&?;\s\"]+)=")
_VALUE_END = re.compile(r"[&\s\"]")
# A name encoded again and again is still decoded to what it names; more rounds than
# this cannot come from a client that meant the name.
_DECODE_ROUNDS = 4

# Merchant consent routes carry the integration token in the path
# (/merchant/api/consents/{token}/...), and an upload URL is its own credential.
_PATH_PATTERN = re.compile(r"(/merchant/api/consents/|/v1/uploads/)[^/?\s\"]+")


def is_secret_param(name: str) -> bool:
    """Whether a query parameter's name, however spelled (`access%5Ftoken`, `CODE`), is a
    credential's: the server decodes names before it reads them, so the log must too."""
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return name.strip().lower() in _SECRET_NAMES


def _redact_query(text: str) -> str:
    kept: list[str] = []
    position = 0
    for match in _PARAM_NAME.finditer(text):
        if match.start() < position or not is_secret_param(match.group(1)):
            continue  # inside a value already redacted, or not a credential
        kept += [text[position : match.end()], "[REDACTED]"]
        end = _VALUE_END.search(text, match.end())
        position = end.start() if end else len(text)
    kept.append(text[position:])
    return "".join(kept)


def redact(text: str) -> str:
    # Every request is logged: skip the regular expressions when nothing could match.
    if "=" in text:
        text = _redact_query(text)
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
