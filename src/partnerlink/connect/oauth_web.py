"""The OAuth authorization endpoint, `{connect_url}/oauth/authorize` (CONTRACT §13).

It checks the request with Authlib, then opens SPEC's consent screen for it: the
merchant signs in, chooses a profile or a manual store and sets preferences on
the consent pages themselves (connect/web.py), which end here again: approval
sends the merchant back to the partner's registered redirect URI with a code and
the partner's `state`; declining sends `error=access_denied`.

RFC 6749 §4.1.2.1: an unknown client, or a redirect URI the partner did not
register, is told to the person in the browser and never redirected (that would
make us an open redirector); any other fault of the request goes back to the
client at its redirect URI.
"""

from __future__ import annotations

from authlib.oauth2 import OAuth2Error
from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from partnerlink.connect.consent_form import (
    Consent,
    ConsentRoute,
    PageError,
    load_consent,
    signin_page,
)
from partnerlink.connect.oauth_flow import (
    AuthorizationRequest,
    authorization_of,
    start_authorization,
)
from partnerlink.connect.oauth_server import HttpRequest, as_response, authorization_server
from partnerlink.deps import SettingsDep
from partnerlink.security.client_address import client_address
from partnerlink.security.rate_limit import FailureBudget
from partnerlink.settings import Settings
from partnerlink.web.routing import PageSessionDep
from partnerlink.web.security import framed_csp

router = APIRouter(include_in_schema=False, route_class=ConsentRoute)

AUTHORIZE_PATH = "/connect/oauth/authorize"
# Each accepted authorization request stores a pending consent, and it takes no credential
# (it is a link a merchant follows): one address may open only so many at a time.
AUTHORIZATIONS_PER_ADDRESS = "30/10minutes"


def authorization_budget(settings: Settings) -> FailureBudget:
    return FailureBudget(
        "oauth-authorize-address", AUTHORIZATIONS_PER_ADDRESS, settings.rate_limit_storage
    )


def _not_redirectable(error: OAuth2Error | ValueError) -> PageError:
    reason = getattr(error, "description", "") or "The request is malformed."
    return PageError(
        400,
        "This connection link is not valid",
        f"{reason} Go back to the app that sent you here and start connecting again.",
        framed_csp([]),
    )


@router.get(AUTHORIZE_PATH)
def authorize(request: Request, session: PageSessionDep, settings: SettingsDep) -> Response:
    server = authorization_server(session, settings)
    http = HttpRequest("GET", str(request.url), request.headers, request.query_params.multi_items())
    try:
        grant = server.get_consent_grant(http)
    except OAuth2Error as error:
        if error.redirect_uri:  # the client and its redirect URI are genuine: tell the client
            return as_response(server.handle_error_response(None, error))
        raise _not_redirectable(error) from error
    except ValueError as error:  # Authlib refuses to echo unprintable input in an error
        raise _not_redirectable(error) from error
    budget = authorization_budget(settings)
    address = client_address(request, settings.trusted_proxy_set)
    if budget.exhausted(address):
        raise PageError(
            429,
            "Too many connection attempts",
            "Wait a few minutes, then start connecting again.",
            framed_csp([]),
            headers={"Retry-After": str(budget.retry_after_seconds(address))},
        )
    budget.record_failure(address)
    payload = grant.request.payload
    integration_token = start_authorization(
        session,
        partner=grant.request.client.partner,
        request=AuthorizationRequest(
            redirect_uri=grant.redirect_uri,
            state=payload.state,
            code_challenge=payload.data["code_challenge"],
            redirect_uri_given=bool(payload.redirect_uri),
        ),
        ttl_seconds=settings.integration_token_ttl_seconds,
    )
    consent = load_consent(
        session,
        client_id=grant.request.client.partner.client_id,
        integration_token=integration_token,
    )
    return signin_page(request, settings, consent)


def oauth_answer(
    session: Session, settings: Settings, consent: Consent, *, approved: bool
) -> Response | None:
    """Where the merchant goes once decided, for a consent that serves an OAuth request.

    None for SPEC's own consents (they show the finished or cancelled page). The
    stored request is checked again as it came in: a partner that withdrew the
    redirect URI meanwhile gets no code there.
    """
    found = authorization_of(session, integration_token=consent.integration_token)
    if found is None:
        return None
    asked, row = found
    params = [
        ("response_type", "code"),
        ("client_id", consent.client_id),
        ("redirect_uri", asked.redirect_uri),
        ("code_challenge", asked.code_challenge),
        ("code_challenge_method", "S256"),
    ]
    if asked.state is not None:
        params.append(("state", asked.state))
    server = authorization_server(session, settings)
    http = HttpRequest("GET", settings.effective_connect_url + "/oauth/authorize", {}, params)
    try:
        grant = server.get_consent_grant(http)
    except (OAuth2Error, ValueError) as error:
        raise PageError(
            400,
            "This connection cannot finish",
            f"{consent.partner_name} changed where it takes you back. "
            "Go back to it and start connecting again.",
            consent.csp,
            consent.partner_name,
        ) from error
    result = server.create_authorization_response(
        grant.request, grant_user=row if approved else None, grant=grant
    )
    response: Response = as_response(result)
    return response
