"""Template rendering for every HTML page, with its security headers."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from partnerlink.web.money import format_money
from partnerlink.web.security import CONSOLE_CSP

PACKAGE_DIR = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = PACKAGE_DIR / "templates"
STATIC_DIR = PACKAGE_DIR / "static"


def as_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def format_when(value: Any) -> str:
    """`12 May 2025, 14:03 UTC`: unambiguous for a merchant in any country."""
    moment = as_datetime(value)
    if moment is None:
        return "—"
    return moment.astimezone(UTC).strftime("%d %b %Y, %H:%M UTC").lstrip("0")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = format_when
    env.filters["money"] = format_money
    env.globals["static"] = static_url
    return env


@lru_cache(maxsize=32)
def _static_version(name: str) -> str:
    path = STATIC_DIR / name
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10] if path.is_file() else "0"


def static_url(name: str) -> str:
    """A static file's address with its content hash, so browsers may cache it forever."""
    return f"/static/{name}?v={_static_version(name)}"


def render(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
    csp: str = CONSOLE_CSP,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """Renders a page with a full Content-Security-Policy of its own."""
    html = _environment().get_template(template).render(request=request, **(context or {}))
    response = HTMLResponse(html, status_code=status_code, headers=headers)
    response.headers["content-security-policy"] = csp
    if "frame-ancestors 'none'" in csp:
        response.headers["x-frame-options"] = "DENY"
    return response


def error_page(
    request: Request,
    *,
    status_code: int,
    title: str,
    message: str,
    csp: str = CONSOLE_CSP,
    headers: dict[str, str] | None = None,
    context: dict[str, Any] | None = None,
    template: str = "error.html",
) -> HTMLResponse:
    return render(
        request,
        template,
        {"title": title, "message": message, "status_code": status_code, **(context or {})},
        status_code=status_code,
        csp=csp,
        headers=headers,
    )
