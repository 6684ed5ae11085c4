"""Turns request validation failures into 400 problem bodies (never FastAPI's 422), in our words.

Every message a partner or a merchant reads is ours: each of pydantic's built-in
error types maps to a phrase below (strings are measured in characters, lists in
items), and our own validators' errors (their own error types, or a ValueError)
keep their text. A body that was never read as JSON, because it was sent as
another content type or is not JSON at all, is named for what it is.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic_core.core_schema import ErrorType

from partnerlink.problems import problem_response

_LOCATION_WORDS = {"body", "query", "path", "header", "cookie"}
JSON_MEDIA_TYPE = "application/json"
BUILTIN_ERROR_TYPES = frozenset(typing.get_args(ErrorType))

_OBJECT = "must be a JSON object"
_ARRAY = "must be a JSON array"
_NUMBER = "must be a number"
_BOOLEAN = "must be true or false"
_TIMESTAMP = "must be an ISO-8601 timestamp, e.g. 2024-05-01T12:30:00Z"

# Built-in error types whose message needs nothing from the error's context.
_FIXED: dict[str, str] = {
    "missing": "required",
    "extra_forbidden": "is not a known field",
    "string_type": "must be a string",
    "string_unicode": "must be valid Unicode text",
    "string_not_ascii": "must be ASCII text",
    "string_pattern_mismatch": "contains characters that are not allowed",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_parsing_size": "is too large a number",
    "int_from_float": "must be a whole number",
    "float_type": _NUMBER,
    "float_parsing": _NUMBER,
    "decimal_type": _NUMBER,
    "decimal_parsing": _NUMBER,
    "finite_number": "must be a finite number",
    "bool_type": _BOOLEAN,
    "bool_parsing": _BOOLEAN,
    "none_required": "must be null",
    "json_type": "must be JSON text",
    "recursion_loop": "is nested too deeply",
    "recursion_depth_exceeded": "is nested too deeply",
    "datetime_type": _TIMESTAMP,
    "datetime_parsing": _TIMESTAMP,
    "datetime_from_date_parsing": _TIMESTAMP,
    "datetime_object_invalid": _TIMESTAMP,
    "date_type": "must be an ISO-8601 date, e.g. 2024-05-01",
    "date_parsing": "must be an ISO-8601 date, e.g. 2024-05-01",
    "uuid_type": "must be a UUID",
    "uuid_parsing": "must be a UUID",
    "url_type": "must be a URL",
    "url_parsing": "must be a URL",
    "url_syntax_violation": "must be a URL",
}
for _kind in (
    "dict_type",
    "model_type",
    "model_attributes_type",
    "dataclass_type",
    "mapping_type",
):
    _FIXED[_kind] = _OBJECT
for _kind in ("list_type", "tuple_type", "set_type", "frozen_set_type", "iterable_type"):
    _FIXED[_kind] = _ARRAY


def _size(error: dict[str, Any], bound: str, words: str) -> str:
    ctx = error.get("ctx") or {}
    limit = ctx.get(f"{bound}_length")
    unit = "characters" if isinstance(error.get("input"), str) else "items"
    if limit is None:
        return f"is too {'short' if bound == 'min' else 'long'}"
    if bound == "min" and limit == 1:
        return "must not be empty"
    return f"must be {words} {limit} {unit if limit != 1 else unit[:-1]}"


def _bound(words: str, key: str) -> Callable[[dict[str, Any]], str]:
    def message(error: dict[str, Any]) -> str:
        value = (error.get("ctx") or {}).get(key)
        return f"must be {words} {value}" if value is not None else "is out of range"

    return message


def _one_of(error: dict[str, Any]) -> str:
    expected = (error.get("ctx") or {}).get("expected")
    return f"must be one of {expected}" if expected else "is not one of the accepted values"


# Built-in error types whose message names a limit or the accepted values.
_FROM_CONTEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    "string_too_short": lambda e: _size(e, "min", "at least"),
    "string_too_long": lambda e: _size(e, "max", "at most"),
    "too_short": lambda e: _size(e, "min", "at least"),
    "too_long": lambda e: _size(e, "max", "at most"),
    "greater_than": _bound("greater than", "gt"),
    "greater_than_equal": _bound("at least", "ge"),
    "less_than": _bound("less than", "lt"),
    "less_than_equal": _bound("at most", "le"),
    "multiple_of": _bound("a multiple of", "multiple_of"),
    "enum": _one_of,
    "literal_error": _one_of,
}


def message_for(error: dict[str, Any]) -> str:
    """Our message for one pydantic error (never pydantic's own wording)."""
    kind = str(error.get("type", ""))
    if kind == "json_invalid":
        return _invalid_json(error)
    if kind in _FIXED:
        return _FIXED[kind]
    if kind in _FROM_CONTEXT:
        return _FROM_CONTEXT[kind](error)
    message = str(error.get("msg") or "is not valid")
    if kind == "value_error":  # raised by our own validators
        return message.removeprefix("Value error, ")
    if kind == "assertion_error":
        return message.removeprefix("Assertion failed, ")
    if kind in BUILTIN_ERROR_TYPES:
        return "is not valid"
    return message  # one of our validators' own error types


def _invalid_json(error: dict[str, Any]) -> str:
    loc = error.get("loc", ())
    position = loc[-1] if loc and isinstance(loc[-1], int) else None
    reason = (error.get("ctx") or {}).get("error")
    where = f" at position {position}" if position is not None else ""
    return f"invalid JSON{where}" + (f": {reason}" if reason else "")


def field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if str(p) not in _LOCATION_WORDS]
    out = ""
    for part in parts:
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "body"


def _is_json(content_type: str | None) -> bool:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == JSON_MEDIA_TYPE or media_type.endswith("+json")


def validation_errors(raw: Sequence[Any]) -> list[dict[str, str]]:
    """CONTRACT.md §3's `errors` of a validation failure (pydantic's `errors()`)."""
    return [{"field": field_name(e.get("loc", ())), "message": message_for(e)} for e in raw]


def problem_from_validation_error(
    error: RequestValidationError, content_type: str | None = None
) -> JSONResponse:
    """The 400 problem for a request FastAPI refused; `content_type` is the request's header."""
    raw = list(error.errors())
    # FastAPI hands the route the raw bytes of a body it did not read as JSON.
    if not _is_json(content_type) and any(
        tuple(e.get("loc", ())) == ("body",) and isinstance(e.get("input"), bytes) for e in raw
    ):
        sent = f"it was sent as {content_type}" if content_type else "no Content-Type was sent"
        message = f"must be {JSON_MEDIA_TYPE}"
        return problem_response(
            400,
            "invalid_content_type",
            f"Content-Type {message} ({sent}); send the body as JSON.",
            errors=[{"field": "Content-Type", "message": message}],
        )
    if any(e.get("type") == "json_invalid" for e in raw):
        message = next(_invalid_json(e) for e in raw if e.get("type") == "json_invalid")
        return problem_response(
            400, "invalid_field", f"body: {message}", errors=[{"field": "body", "message": message}]
        )
    errors = validation_errors(raw)
    missing = [f for f, e in zip(errors, raw, strict=True) if e.get("type") == "missing"]
    first = missing[0] if missing else errors[0] if errors else {"field": "body", "message": ""}
    if missing:
        detail = f"{first['field']} is required"
    else:
        detail = f"{first['field']}: {first['message'] or 'is not valid'}"
    return problem_response(
        400, "missing_field" if missing else "invalid_field", detail, errors=errors
    )
