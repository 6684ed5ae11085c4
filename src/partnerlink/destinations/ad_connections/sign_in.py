"""A sign-in from start to finish (CONTRACT §14): the authorize URL with a fresh
`state`, then the callback's checks, the code's exchange and the connection saved.
Nothing is stored when any step fails (the state is only marked used)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from sqlalchemy.orm import Session

from partnerlink.destinations.ad_connections import google_login, meta_login, service, states
from partnerlink.destinations.ad_connections.errors import PlatformUnavailable
from partnerlink.destinations.ad_connections.models import AdConnection, AdConnectionState
from partnerlink.settings import Settings

NAMES = service.NAMES


class SignInFailed(Exception):
    """What happened and what to do, in a store owner's words (the callback page)."""

    def __init__(self, title: str, message: str) -> None:
        super().__init__(title)
        self.title, self.message = title, message


@dataclass(frozen=True)
class Finished:
    connection: AdConnection
    via: str
    segment: str | None


def start(
    session: Session,
    settings: Settings,
    *,
    platform: str,
    profile_id: str,
    merchant_id: str,
    session_token: str,
    via: str,
    segment: str | None = None,
    connection_id: str | None = None,
) -> str:
    """The platform's sign-in address for this merchant's session and profile."""
    service.require_configured(settings, platform)
    verifier = google_login.new_verifier() if platform == "google" else None
    issued = states.issue(
        session,
        settings.signing_key,
        profile_id=profile_id,
        merchant_id=merchant_id,
        session_token=session_token,
        via=via,
        platform=platform,
        verifier=verifier,
        segment=segment,
        connection_id=connection_id,
    )
    if platform == "meta":
        return meta_login.authorize_url(settings, issued.state)
    assert verifier is not None
    return google_login.authorize_url(settings, issued.state, verifier)


_STATE_WORDS = {
    "unknown": "This sign-in link was not made for you, or it was changed on the way.",
    "used": "This sign-in was already finished once; a link works only once.",
    "expired": "This sign-in took longer than 10 minutes.",
    "session": "This sign-in was started in another session or by another account.",
}


def finish(
    session: Session,
    settings: Settings,
    client: httpx.Client,
    *,
    platform: str,
    state: str,
    code: str,
    error: str,
    session_token: str | None,
    session_merchant_id: str | None,
) -> Finished:
    name = NAMES[platform]
    again = f'Open the Ad platforms page and click "Connect with {name}" again.'
    if not service.configured(settings, platform):
        raise SignInFailed(f"{name} is not set up here", "Ask the operator of this service.")
    try:
        record = states.consume(
            session,
            state=state,
            platform=platform,
            session_token=session_token,
            session_merchant_id=session_merchant_id,
        )
    except states.StateRefused as refused:
        raise SignInFailed(
            "Nothing was connected", f"{_STATE_WORDS[refused.reason]} {again}"
        ) from None
    if error:
        raise SignInFailed(
            "Nothing was connected",
            f"You did not allow PartnerLink to manage your {name} ads, so nothing was "
            f"connected. {again} Then choose Continue or Allow.",
        )
    if not code or len(code) > 2048:
        raise SignInFailed("Nothing was connected", f"{name} sent no sign-in code. {again}")
    try:
        return _exchanged(session, settings, client, record, code)
    except (meta_login.CodeRefused, google_login.CodeRefused):
        raise SignInFailed(
            "Nothing was connected",
            f"{name} did not accept this sign-in (it was already used or took too long). {again}",
        ) from None
    except PlatformUnavailable:
        raise SignInFailed(
            "Nothing was connected",
            f"{name} could not be reached. Try again in a few minutes: {again}",
        ) from None


def _exchanged(
    session: Session,
    settings: Settings,
    client: httpx.Client,
    record: AdConnectionState,
    code: str,
) -> Finished:
    if record.platform == "meta":
        meta = meta_login.exchange_code(client, settings, code)
        token, expires_at, account_name = meta.access_token, meta.expires_at, meta.account_name
    else:
        verifier = states.verifier_of(settings.signing_key, record)
        if verifier is None:
            raise google_login.CodeRefused()
        token = google_login.exchange_code(client, settings, code, verifier)
        expires_at, account_name = None, "Google account"
    connection = service.save(
        session,
        settings,
        profile_id=record.profile_id,
        merchant_id=record.merchant_id,
        platform=record.platform,
        token=token,
        expires_at=expires_at,
        account_name=account_name,
        replacing=record.connection_id,
    )
    return Finished(connection, record.via, record.segment)
