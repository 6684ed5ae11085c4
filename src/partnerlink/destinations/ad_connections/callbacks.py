"""Where Meta and Google send the merchant's browser back (CONTRACT §14):
`/merchant/ad-platforms/{meta|google}/callback?code&state` (or `error=access_denied`).

Every outcome is a page in words; a failure stores nothing but the state's use (the
route returns its page rather than raising, so that use is committed: a state works once).
A sign-in started on the console goes on to its pick step; one started through the API
ends on a page saying it is done.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from partnerlink.deps import SettingsDep
from partnerlink.destinations.ad_connections import sign_in
from partnerlink.destinations.platform import platform_client
from partnerlink.merchant.pages import HOME_PATH, ConsoleRoute
from partnerlink.merchant.sessions import merchant_for_session_token
from partnerlink.web.pages import error_page
from partnerlink.web.routing import PageSessionDep
from partnerlink.web.security import session_cookie

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)


def _finished(
    request: Request, platform: str, session: PageSessionDep, settings: SettingsDep
) -> Response:
    query = request.query_params
    token = session_cookie(request, settings) or None
    merchant = merchant_for_session_token(session, token) if token else None
    try:
        with platform_client(request_seconds=settings.ad_request_timeout_seconds) as http:
            done = sign_in.finish(
                session,
                settings,
                http,
                platform=platform,
                state=query.get("state", ""),
                code=query.get("code", ""),
                error=query.get("error", ""),
                session_token=token if merchant else None,
                session_merchant_id=merchant.id if merchant else None,
            )
    except sign_in.SignInFailed as failed:
        return error_page(
            request,
            status_code=400,
            title=failed.title,
            message=failed.message,
            context={"home_url": HOME_PATH, "home_label": "Back to your stores"},
        )
    connection = done.connection
    page = f"/merchant/profiles/{connection.profile_id}/ad-platforms"
    if done.via == "console":
        chosen = f"?{urlencode({'segment': done.segment})}" if done.segment else ""
        return RedirectResponse(f"{page}/connections/{connection.id}{chosen}#pick", 303)
    name = sign_in.NAMES[platform]
    return error_page(
        request,
        status_code=200,
        title=f"Connected with {name}",
        message=f"PartnerLink may now keep your audiences and sales up to date on {name}. "
        "You can close this window.",
        context={"home_url": page, "home_label": "Open the Ad platforms page"},
    )


@router.get("/ad-platforms/meta/callback")
def meta_callback(request: Request, session: PageSessionDep, settings: SettingsDep) -> Response:
    return _finished(request, "meta", session, settings)


@router.get("/ad-platforms/google/callback")
def google_callback(request: Request, session: PageSessionDep, settings: SettingsDep) -> Response:
    return _finished(request, "google", session, settings)
