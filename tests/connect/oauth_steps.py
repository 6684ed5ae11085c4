"""The OAuth flow as a partner and a merchant's browser take it: a stock client, real pages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from sqlalchemy.orm import Session

from partnerlink.connect.oauth_web import authorization_budget
from partnerlink.connect.signin import consent_address_budget
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.partners.service import register_partner
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.factories import (
    DEFAULT_PASSWORD,
    PartnerWithSecret,
    create_merchant_account,
    create_profile,
    create_store,
)
from tests.web.pages import form

REDIRECT_URI = "https://pos.example.com/oauth/callback"
EMAIL = "oauth-owner@example.com"
STORE_PROFILE = {"storeName": "Bistro", "storeAddress": "2 Side St", "storeCountryCode": "US"}


@dataclass
class OAuthWorld:
    partner: PartnerWithSecret
    merchant: Merchant
    profile: Profile
    store: Store  # a manually added store the merchant may hand over


def build_oauth_world(
    session: Session,
    *,
    sandbox: bool = False,
    pos_type: str = "acme-pos",
    redirect_uri: str = REDIRECT_URI,
    email: str = EMAIL,
) -> OAuthWorld:
    registered = register_partner(
        session,
        name="Acme POS",
        pos_type=pos_type,
        redirect_uris=[redirect_uri],
        sandbox=sandbox,
    )
    session.commit()
    partner = PartnerWithSecret(
        registered.partner, registered.partner.client_id, registered.client_secret
    )
    merchant = create_merchant_account(session, email=email)
    profile = create_profile(session, merchant)
    store = create_store(session, profile, manual=True)
    return OAuthWorld(partner, merchant, profile, store)


def stock_client(
    base_url: str,
    partner: PartnerWithSecret,
    *,
    transport: httpx.BaseTransport | None = None,
    auth_method: str = "client_secret_basic",
) -> OAuth2Client:
    """Authlib's own httpx client, configured as any partner would configure it."""
    return OAuth2Client(
        client_id=partner.client_id,
        client_secret=partner.client_secret,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method=auth_method,
        base_url=base_url,
        transport=transport,
    )


@dataclass
class Started:
    url: str
    state: str
    code_verifier: str


def start(oauth: OAuth2Client, authorize_endpoint: str) -> Started:
    verifier = generate_token(48)
    url, state = oauth.create_authorization_url(authorize_endpoint, code_verifier=verifier)
    return Started(url, state, verifier)


def sign_in(browser: httpx.Client, authorize_url: str, email: str = EMAIL) -> httpx.Response:
    """The merchant opens the link and signs in; answers the choice page."""
    page = browser.get(authorize_url)
    assert page.status_code == 200, page.text
    signin = form(page.text, "/connect/signin")
    chosen = browser.post(
        "/connect/signin", data={**signin.fields, "email": email, "password": DEFAULT_PASSWORD}
    )
    assert chosen.status_code == 200, chosen.text
    return chosen


def approve(
    browser: httpx.Client, authorize_url: str, target: str, email: str = EMAIL
) -> httpx.Response:
    """Signs in, chooses `target` (`profile:ID` or `store:ID`) and allows."""
    choose = sign_in(browser, authorize_url, email)
    approval = form(choose.text, "/connect/approve")
    return browser.post("/connect/approve", data={**approval.fields, "target": target})


def redirected_params(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(REDIRECT_URI + "?"), location
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def authorized(browser: httpx.Client, oauth: OAuth2Client, endpoint: str, target: str) -> Any:
    """The whole browser side: the redirect's Location and the flow's verifier."""
    started = start(oauth, endpoint)
    response = approve(browser, started.url, target)
    params = redirected_params(response)
    assert params["state"] == started.state
    return response.headers["location"], started


def challenge_of(verifier: str) -> str:
    return str(create_s256_code_challenge(verifier))


def reset_budgets(settings: Settings) -> None:
    """Budgets live in process memory; one test's requests must not count in the next."""
    for address in ("testclient", "127.0.0.1"):
        authorization_budget(settings).reset(address)
        consent_address_budget(settings).reset(address)
