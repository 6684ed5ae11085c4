"""The error body of CONTRACT.md §3 (RFC 9457 problem+json) and domain errors.

Services raise a DomainError subclass carrying a stable `code`; one handler
turns it into the response. Nothing here ever echoes a secret or a trace.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

# Starlette's own (fastapi.responses re-exports it): importing fastapi would cost every
# command-line call ~0.5 s.
from starlette.responses import JSONResponse

PROBLEM_MEDIA_TYPE = "application/problem+json"


class DomainError(Exception):
    status: int = 400
    code: str = "bad_request"
    detail: str = "The request could not be applied."

    def __init__(
        self,
        detail: str | None = None,
        *,
        code: str | None = None,
        errors: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.detail = detail or self.detail
        self.code = code or self.code
        self.errors = errors
        self.headers = headers
        super().__init__(self.detail)


class BadRequest(DomainError):
    status = 400
    code = "bad_request"


class ValidationFailed(BadRequest):
    code = "invalid_field"


class Unauthorized(DomainError):
    status = 401
    code = "invalid_credentials"
    detail = "Wrong email or password."


class Forbidden(DomainError):
    status = 403
    code = "forbidden"
    detail = "Not allowed."


class InvalidCredentials(Forbidden):
    code = "invalid_credentials"
    detail = "Invalid client id or client secret."


class InvalidToken(Forbidden):
    code = "invalid_token"
    detail = "The access token is missing, malformed, expired or revoked."


class NotFound(DomainError):
    status = 404
    code = "not_found"
    detail = "Not found."


class Conflict(DomainError):
    status = 409
    code = "conflict"


class Gone(DomainError):
    status = 410
    code = "gone"


class PayloadTooLarge(DomainError):
    status = 413
    code = "payload_too_large"
    detail = "The request body is larger than allowed."


# On an answer to an unexpected error. Starlette raises the error again once the answer is
# sent, and uvicorn then closes the connection: said in the answer, the client opens a new
# one for its next request instead of sending it into a closed socket (a reset).
CLOSE_CONNECTION = {"Connection": "close"}


class InternalError(DomainError):
    """Only for the handlers of unexpected errors: a route never raises it."""

    status = 500
    code = "internal_error"
    detail = "Unexpected error; safe to retry with exponential backoff."


class RateLimited(DomainError):
    status = 429
    code = "rate_limited"
    detail = "Too many attempts; try again later."

    def __init__(self, retry_after_seconds: int, detail: str | None = None) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, retry_after_seconds))})


class Unavailable(DomainError):
    """The service cannot take the request now (a busy database): nothing was applied.

    A 500, never a 503: SPEC.md lists no 503, and its handling rules retry a 500
    with exponential backoff (CONTRACT.md §6). `Retry-After` says how soon.
    """

    status = 500
    code = "unavailable"
    detail = "The service cannot take this request now; retry with exponential backoff."

    def __init__(self, detail: str | None = None, *, retry_after_seconds: int = 1) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, retry_after_seconds))})


def problem_body(
    status: int,
    code: str,
    detail: str,
    errors: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if errors:
        body["errors"] = errors
    body["success"] = False
    return body


def problem_response(
    status: int,
    code: str,
    detail: str,
    errors: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        problem_body(status, code, detail, errors),
        status_code=status,
        headers=headers,
        media_type=PROBLEM_MEDIA_TYPE,
    )


def problem_from(error: DomainError) -> JSONResponse:
    return problem_response(error.status, error.code, error.detail, error.errors, error.headers)


def field_problem(field: str, message: str) -> ValidationFailed:
    """A validation failure of one field, as the request-validation handler words it: an
    OpenAPI example (`problem_responses(field_problem("storeName", "required"))`)."""
    if message == "required":
        return ValidationFailed(
            f"{field} is required",
            code="missing_field",
            errors=[{"field": field, "message": message}],
        )
    return ValidationFailed(f"{field}: {message}", errors=[{"field": field, "message": message}])


PROBLEM_SCHEMA_REF = {"$ref": "#/components/schemas/Problem"}


def problem_responses(
    *errors: type[DomainError] | DomainError,
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` for a route, built from the errors it may raise.

    An error class shows its default detail; an instance (for a validation failure, with its
    `errors`) shows its own. One response per status, with one named example per `code`.
    """
    out: dict[int | str, dict[str, Any]] = {}
    for error in errors:
        add_problem_example(out, problem_example(error))
    return out


def problem_example(error: type[DomainError] | DomainError) -> dict[str, Any]:
    errors = error.errors if isinstance(error, DomainError) else None
    return problem_body(error.status, error.code, error.detail, errors)


def add_problem_example(responses: dict[int | str, dict[str, Any]], body: dict[str, Any]) -> None:
    """Adds a problem body to `responses` under its status (string or int key), once per code."""
    status = int(body["status"])
    key: int | str = status if status in responses else str(status)
    response = responses.setdefault(key, {})
    content = response.setdefault("content", {}).setdefault(PROBLEM_MEDIA_TYPE, {})
    content["schema"] = PROBLEM_SCHEMA_REF
    content.pop("example", None)
    examples = content.setdefault("examples", {})
    examples.setdefault(body["code"], {"summary": body["detail"], "value": body})
    codes = ", ".join(f"`{code}`" for code in examples)
    response["description"] = f"{HTTPStatus(status).phrase} — code {codes}"
