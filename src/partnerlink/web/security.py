"""Cookies, CSRF tokens and Content-Security-Policy headers of the HTML pages."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request, Response

from partnerlink.security.secrets import digest, sign, verify_signature
from partnerlink.settings import Settings

# Every page: our own styles only, no scripts at all, forms post only to us.
_BASE_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "script-src 'self'; form-action 'self'; base-uri 'none'"
)
CONSOLE_CSP = f"{_BASE_POLICY}; frame-ancestors 'none'"


def framed_csp(frame_origins: list[str], form_targets: list[str] | None = None) -> str:
    """The consent screen may be framed by exactly the partner's registered origins.

    `form_targets` are further origins a form may end at: an OAuth consent's last
    form is answered with a redirect to the partner, and browsers check the
    redirect's target against `form-action` too.
    """
    origins = [o for o in (_clean_origin(o) for o in frame_origins) if o]
    sources = " ".join(origins) if origins else "'none'"
    policy = _BASE_POLICY
    targets = [o for o in (_clean_origin(_origin_of(u)) for u in form_targets or []) if o]
    if targets:
        policy = policy.replace("form-action 'self'", "form-action 'self' " + " ".join(targets))
    return f"{policy}; frame-ancestors {sources}"


def _origin_of(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}"


def _clean_origin(origin: str) -> str | None:
    """An origin fit for a CSP source list; anything else is dropped, never passed through."""
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if any(c in origin for c in " ;,'\"\r\n"):
        return None
    return f"{parts.scheme}://{parts.netloc}"


def session_cookie_name(settings: Settings) -> str:
    """`__Host-` when served over HTTPS, a plain name otherwise.

    Browsers accept a `__Host-` cookie only with `Secure`, and they refuse
    `Secure` cookies from a plain-http origin such as http://127.0.0.1:8000 (the
    default address). Over HTTPS we get the prefix's guarantees (host-only, path
    /, Secure); over plain http the cookie could not travel safely anyway.
    """
    return "__Host-partnerlink_session" if _served_over_https(settings) else "partnerlink_session"


def _served_over_https(settings: Settings) -> bool:
    return settings.public_url.lower().startswith("https://")


def set_session_cookie(response: Response, settings: Settings, token: str, max_age: int) -> None:
    response.set_cookie(
        session_cookie_name(settings),
        token,
        max_age=max_age,
        path="/",
        secure=_served_over_https(settings),
        httponly=True,
        samesite="lax",
    )


def clear_session_cookie(response: Response, settings: Settings) -> None:
    response.delete_cookie(
        session_cookie_name(settings),
        path="/",
        secure=_served_over_https(settings),
        httponly=True,
        samesite="lax",
    )


def session_cookie(request: Request, settings: Settings) -> str:
    value = request.cookies.get(session_cookie_name(settings), "")
    return value if 0 < len(value) <= 200 else ""


def csrf_token_for(settings: Settings, session_token: str) -> str:
    """A CSRF token bound to one console session, derived so nothing needs storing."""
    return sign(settings.signing_key, f"console-csrf:{digest(session_token)}")


def csrf_token_valid(settings: Settings, session_token: str, presented: str) -> bool:
    if not session_token or not presented or not presented.isascii() or len(presented) > 200:
        return False
    return verify_signature(
        settings.signing_key, f"console-csrf:{digest(session_token)}", presented
    )


def same_origin_post(request: Request, settings: Settings) -> bool:
    """Refuses form posts a browser marks as coming from another site.

    Defence in depth beside the CSRF token, and the only guard of the sign-in
    form (which has no session yet). Every page answers `Referrer-Policy:
    no-referrer`, under which browsers send `Origin: null` even for our own
    forms; so the Fetch Metadata header `Sec-Fetch-Site` (sent by every current
    browser) decides, and `Origin` only when it is absent.
    """
    fetch_site = request.headers.get("sec-fetch-site", "")
    if fetch_site:
        return fetch_site in ("same-origin", "none")
    origin = request.headers.get("origin", "")
    if not origin or origin == "null":
        return True  # an older browser or a non-browser client: not a cross-site form post
    ours = {urlsplit(settings.public_url).netloc.lower(), request.headers.get("host", "").lower()}
    return urlsplit(origin).netloc.lower() in ours
