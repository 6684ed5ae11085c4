"""Keeps secrets out of logs: the legacy ?access_token=, every credential query parameter,
the path segments that are credentials (integration tokens, pre-signed upload URLs), and
anything that looks like one of our secrets (`plk_at_…`), wherever it stands."""

from __future__ import annotations

import logging
import re
import unicodedata
from urllib.parse import unquote_plus

from partnerlink.security.secrets import SECRET_PREFIXES

SECRET_QUERY_PARAMS = (
    "access_token",
    "client_secret",
    "code",
    "fb_exchange_token",  # Meta's short-lived token, exchanged for a long-lived one (§14)
    "integration_token",
    "refresh_token",
    "token",  # POST /v1/auth/revoke?token=: an access or refresh token
    "k",
    "sig",
)
# Names compared by their letters and digits only (`_compact`).
_SECRET_NAMES = frozenset(name.replace("_", "") for name in SECRET_QUERY_PARAMS)
# A parameter's name as the request line spells it: percent-encoded or not (CONTRACT §12).
# ASCII: a request line ends at an ASCII space, and a name that holds another (U+00A0) is
# still one name.
_PARAM_NAME = re.compile(r"[?&;]([^=&?;\s\"]+)=", re.ASCII)
_VALUE_END = re.compile(r"[&\s\"]", re.ASCII)
# A name encoded again and again is still decoded to what it names; more rounds than
# this cannot come from a client that meant the name.
_DECODE_ROUNDS = 4
# One of our secrets, whatever carries it (a parameter of another name, a path, a message):
# the prefix, then what `secrets.mint` draws (sandbox's `test_` included).
_SECRET_VALUE = re.compile(
    "(" + "|".join(re.escape(prefix) for prefix in SECRET_PREFIXES) + r")[A-Za-z0-9_\-]+"
)
# Not a letter or digit, for `_compact`: underscores, NUL, U+200B and the like.
_NOT_ALNUM = re.compile(r"[\W_]+")

# Merchant consent routes carry the integration token in the path
# (/merchant/api/consents/{token}/...), and an upload URL is its own credential.
_PATH_PATTERN = re.compile(r"(/merchant/api/consents/|/v1/uploads/)[^/?\s\"]+")


def _decoded(text: str) -> str:
    """Percent-decoded as `urllib.parse.parse_qsl` decodes (what the routes read), again
    while that changes it."""
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote_plus(text)
        if decoded == text:
            break
        text = decoded
    return text


def _compact(name: str) -> str:
    """A name's letters and digits, case-folded: a spelling with a NUL, a zero-width space
    or other punctuation around or inside a credential's name is still that name."""
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKC", name).casefold())


def is_secret_param(name: str) -> bool:
    """Whether a query parameter's name, however spelled (`access%5Ftoken`, `CODE`,
    `access_token%00`), is a credential's. The routes read names percent-decoded, so the
    log must decode them too; and a spelling the route does not take still shows what the
    client meant to send, so it is kept out of the log as well."""
    return _compact(_decoded(name)) in _SECRET_NAMES


def _is_secret_value(value: str) -> bool:
    return "plk" in value and _SECRET_VALUE.search(value) is not None


def _redact_query(text: str) -> str:
    kept: list[str] = []
    position = 0
    for match in _PARAM_NAME.finditer(text):
        if match.start() < position:
            continue  # inside a value already redacted
        end = _VALUE_END.search(text, match.end())
        value_end = end.start() if end else len(text)
        value = text[match.end() : value_end]
        if not is_secret_param(match.group(1)) and not (
            "%" in value and _is_secret_value(_decoded(value))  # `plk%5Fat%5F…`
        ):
            continue  # not a credential (a plain `plk_…` value goes in `redact`)
        kept += [text[position : match.end()], "[REDACTED]"]
        position = value_end
    kept.append(text[position:])
    return "".join(kept)


def redact(text: str) -> str:
    # Every request is logged: skip the regular expressions when nothing could match.
    if "=" in text:
        text = _redact_query(text)
    if "/merchant/api/consents/" in text or "/v1/uploads/" in text:
        text = _PATH_PATTERN.sub(r"\1[REDACTED]", text)
    if "plk_" in text:
        text = _SECRET_VALUE.sub(r"\1[REDACTED]", text)
    return text


_TRACEBACKS = logging.Formatter()


def _redacted_arg(value: object) -> object:
    """A string redacted; so is an object printed as one that may hold a query (httpx
    logs each request's `httpx.URL`, with the app secret or a code in it)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, int | float | bool) or value is None:
        return value
    text = str(value)
    return redact(text) if "=" in text else value


class RedactingFilter(logging.Filter):
    """Rewrites log records (uvicorn's access log included) before any handler sees them;
    an error's traceback too, rendered here once (formatters print `exc_text` as it is)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted_arg(a) for a in record.args)
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
