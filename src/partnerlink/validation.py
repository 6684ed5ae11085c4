"""Turns request validation failures into 400 problem bodies (never FastAPI's 422)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from partnerlink.problems import problem_response

_LOCATION_WORDS = {"body", "query", "path", "header", "cookie"}


def field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if str(p) not in _LOCATION_WORDS]
    out = ""
    for part in parts:
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "body"


def _message(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "missing":
        return "required"
    if kind in ("json_invalid", "model_attributes_type", "dict_type", "model_type"):
        return "must be a JSON object"
    message = str(error.get("msg", "invalid"))
    return message.removeprefix("Value error, ")


def validation_errors(raw: Sequence[Any]) -> list[dict[str, str]]:
    """CONTRACT.md §3's `errors` of a validation failure (pydantic's `errors()`)."""
    return [{"field": field_name(e.get("loc", ())), "message": _message(e)} for e in raw]


def problem_from_validation_error(error: RequestValidationError) -> JSONResponse:
    errors = validation_errors(error.errors())
    missing = any(e.get("type") == "missing" for e in error.errors())
    first = errors[0] if errors else {"field": "body", "message": "invalid"}
    if first["message"] == "required":
        detail = f"{first['field']} is required"
    else:
        detail = f"{first['field']}: {first['message']}"
    return problem_response(
        400, "missing_field" if missing else "invalid_field", detail, errors=errors
    )
