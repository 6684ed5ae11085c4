"""JSON logs (PARTNERLINK_LOG_FORMAT=json, CONTRACT §10): one object a line, for log pipelines.

Every line has timestamp, level, logger and message. A request's lines (uvicorn's
access line, and whatever the service logs while answering) also carry its
request id; the access line carries the method, path, route template, status
and duration too. Secrets are removed before any formatter sees a record, by
the same filter as in text logs (security/redaction.py), so both formats show
exactly the same redacted text.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# What a load balancer's X-Request-ID may look like to be kept; anything else is replaced.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@dataclass(frozen=True)
class RequestLog:
    """The request being answered, as its log lines need it."""

    request_id: str
    started: float  # time.perf_counter()
    route: Callable[[], str]  # the route template, known once the request was routed


CURRENT_REQUEST: ContextVar[RequestLog | None] = ContextVar("partnerlink_request", default=None)


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    """The caller's X-Request-ID when it is a plain token, else a new one."""
    for name, value in headers:
        if name == b"x-request-id":
            candidate = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(candidate):
                return candidate
    return secrets.token_hex(8)


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = CURRENT_REQUEST.get()
        if request is not None:
            entry["request_id"] = request.request_id
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            entry.update(_access_fields(record.args, request))
        if record.exc_info:
            # The redaction filter leaves the traceback redacted in `exc_text`.
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _access_fields(args: tuple[Any, ...], request: RequestLog | None) -> dict[str, Any]:
    """uvicorn's access line: (client, method, path with query, HTTP version, status)."""
    if len(args) != 5:
        return {}
    client, method, path, _, status = args
    fields: dict[str, Any] = {"client": client, "method": method, "path": path, "status": status}
    if request is not None:
        fields["route"] = request.route()
        # uvicorn logs when the answer starts, which for our JSON answers is all but its last write.
        fields["duration_ms"] = round((time.perf_counter() - request.started) * 1000, 3)
    return fields


def use_json_logs(config: dict[str, Any]) -> dict[str, Any]:
    """Turns a logging dictConfig's every formatter into the JSON one (in place)."""
    for name in list(config.get("formatters", {})):
        config["formatters"][name] = {"()": "partnerlink.log_format.JsonFormatter"}
    return config
