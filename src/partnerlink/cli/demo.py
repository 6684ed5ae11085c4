"""`partnerlink demo`: a demo partner, merchant, profile and store, with commands to paste.

Running it again reuses what exists. Secrets are stored only as digests, so a re-run
mints a new client secret and a new merchant password: what it prints always works.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

import typer
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.cli.common import JsonOption, console, load_settings, print_json, unit_of_work
from partnerlink.merchant.accounts import create_merchant
from partnerlink.merchant.manual_stores import create_manual_store
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.merchant.profiles import create_profile
from partnerlink.pairing.service import reserve_pairing_code
from partnerlink.partners.models import Partner
from partnerlink.partners.service import register_partner, rotate_client_secret
from partnerlink.security.passwords import hash_password
from partnerlink.settings import Settings
from partnerlink.stores.models import Store

DEMO_PARTNER_NAME = "Demo POS"
DEMO_POS_TYPE = "demo-pos"
DEMO_FRAME_ORIGIN = "http://localhost:8080"
DEMO_EMAIL = "demo@partnerlink.test"
DEMO_PROFILE_NAME = "Demo Bistro"
DEMO_STORE_NAME = "Demo Bistro Main Street"
DEMO_STORE_ADDRESS = "1 Main Street"
DEMO_STORE_COUNTRY = "US"

# Extracts one field of a JSON answer in the pasted commands; python3 is everywhere jq is not.
# An error answer is printed whole instead, so the next command shows what went wrong.
_PICK = "python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(\"{field}\") or d)'"


@dataclass
class DemoSetup:
    partner: Partner
    client_secret: str
    merchant: Merchant
    password: str
    profile: Profile
    store: Store
    pairing_code: int | None
    pairing_expires_at: str | None


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(json_output: bool = JsonOption) -> None:
    """Create (or reuse) a demo partner, merchant, profile and store, with ready-to-paste commands."""
    settings = load_settings()
    with unit_of_work(settings) as session:
        setup = prepare_demo(session, settings=settings)
        out = demo_summary(setup, settings=settings)
    if json_output:
        print_json(out)
    else:
        _print_text(out, settings)


def prepare_demo(session: Session, *, settings: Settings) -> DemoSetup:
    """Creates or reuses every demo record and mints fresh credentials for them."""
    partner = session.scalar(select(Partner).where(Partner.pos_type == DEMO_POS_TYPE))
    if partner is None:
        registered = register_partner(
            session,
            name=DEMO_PARTNER_NAME,
            pos_type=DEMO_POS_TYPE,
            ereceipt=True,
            frame_origins=[DEMO_FRAME_ORIGIN],
        )
        partner, client_secret = registered.partner, registered.client_secret
    else:
        client_secret = rotate_client_secret(session, partner.client_id)

    password = secrets.token_urlsafe(12)
    merchant = session.scalar(select(Merchant).where(Merchant.email == DEMO_EMAIL))
    if merchant is None:
        merchant = create_merchant(session, email=DEMO_EMAIL, password=password, name="Demo")
    else:
        merchant.password_hash = hash_password(password)

    profile = session.scalar(
        select(Profile)
        .where(Profile.merchant_id == merchant.id, Profile.name == DEMO_PROFILE_NAME)
        .order_by(Profile.created_at)
        .limit(1)
    ) or create_profile(session, merchant_id=merchant.id, name=DEMO_PROFILE_NAME)

    store = session.scalar(
        select(Store)
        .where(Store.profile_id == profile.id, Store.name == DEMO_STORE_NAME)
        .order_by(Store.created_at)
        .limit(1)
    ) or create_manual_store(
        session,
        merchant_id=merchant.id,
        profile_id=profile.id,
        name=DEMO_STORE_NAME,
        address=DEMO_STORE_ADDRESS,
        country_code=DEMO_STORE_COUNTRY,
    )

    code, expires_at = _reserve_code(session, settings=settings, merchant=merchant, store=store)
    session.flush()
    return DemoSetup(partner, client_secret, merchant, password, profile, store, code, expires_at)


def _reserve_code(
    session: Session, *, settings: Settings, merchant: Merchant, store: Store
) -> tuple[int | None, str | None]:
    reserved = reserve_pairing_code(
        session,
        settings=settings,
        merchant_id=merchant.id,
        store_id=store.id,
        pos_type=DEMO_POS_TYPE,
    )
    return reserved.code, reserved.expires_at.isoformat()


def demo_summary(setup: DemoSetup, *, settings: Settings) -> dict[str, Any]:
    """Returns everything the demo prints, as one JSON-ready object."""
    partner = setup.partner
    return {
        "publicUrl": settings.public_url,
        "partner": {
            "id": partner.id,
            "name": partner.name,
            "posType": partner.pos_type,
            "clientId": partner.client_id,
            "clientSecret": setup.client_secret,
            "ereceipt": partner.ereceipt,
        },
        "merchant": {
            "id": setup.merchant.id,
            "email": setup.merchant.email,
            "password": setup.password,
            "consoleUrl": f"{settings.public_url}/merchant",
        },
        "profile": {"id": setup.profile.id, "name": setup.profile.name},
        "store": {
            "id": setup.store.id,
            "name": setup.store.name,
            "countryCode": setup.store.country_code,
            "currency": setup.store.currency,
            "manual": setup.store.manual,
        },
        "pairingCode": setup.pairing_code,
        "pairingCodeExpiresAt": setup.pairing_expires_at,
        "commands": demo_commands(setup, settings=settings),
    }


def demo_commands(setup: DemoSetup, *, settings: Settings) -> list[dict[str, str]]:
    """Returns the curl commands of both flows, in the order they are run."""
    base = settings.public_url
    creds = "client_id=$CLIENT_ID&client_secret=$CLIENT_SECRET"
    profile_body = json.dumps(
        {
            "storeName": "Demo Bistro (from the POS)",
            "storeAddress": DEMO_STORE_ADDRESS,
            "storeCity": "Springfield",
            "storeCountryCode": DEMO_STORE_COUNTRY,
            "storePhoneNumber": "+12175550100",
        }
    )

    def put_store(token_variable: str) -> str:
        return (
            f'curl -s -X PUT "$PL_BASE/v1/stores" -H "Authorization: Bearer ${token_variable}" '
            f"-H 'Content-Type: application/json' -d '{profile_body}'"
        )

    consent = [
        (
            "Set the shell variables used below",
            f"export PL_BASE='{base}' CLIENT_ID='{setup.partner.client_id}' "
            f"CLIENT_SECRET='{setup.client_secret}'",
        ),
        (
            "Create an integration token",
            f'IT=$(curl -s -X POST "$PL_BASE/v1/auth/integration?{creds}" '
            f"| {_PICK.format(field='integrationToken')}); echo $IT",
        ),
        (
            f"Open the consent screen; sign in as {setup.merchant.email}, pick the profile "
            f'"{setup.profile.name}" (a new store is made for this partner), confirm',
            f'echo "{settings.effective_connect_url}/?client_id=$CLIENT_ID&integration_token=$IT"',
        ),
        (
            "Poll the status until it says finished",
            f'curl -s "$PL_BASE/v1/auth/integration?{creds}&integration_token=$IT"',
        ),
        (
            "Exchange the finished token, once, for an access and a refresh token",
            f'TOKENS=$(curl -s "$PL_BASE/v1/auth/integration/token?{creds}&integration_token=$IT")'
            f"; echo $TOKENS; ACCESS_TOKEN=$(echo $TOKENS | {_PICK.format(field='accessToken')})"
            f"; REFRESH_TOKEN=$(echo $TOKENS | {_PICK.format(field='refreshToken')})",
        ),
        (
            "Refresh the access token",
            f'ACCESS_TOKEN=$(curl -s -X POST "$PL_BASE/v1/auth/token?{creds}'
            f'&grant_type=refresh_token&code=$REFRESH_TOKEN" '
            f"| {_PICK.format(field='accessToken')}); echo $ACCESS_TOKEN",
        ),
        ("Send the store profile", put_store("ACCESS_TOKEN")),
    ]
    pairing = [
        ("Set the shell variable used below", f"export PL_BASE='{base}'"),
        (
            f"Redeem the pairing code of {setup.store.name} (once; `partnerlink demo` "
            "reserves a new one)",
            f'PAIRED_TOKEN=$(curl -s -X POST "$PL_BASE/v1/auth/integration/pair" '
            f"-H 'Content-Type: application/json' -d '{{\"code\": {setup.pairing_code}}}' "
            f"| {_PICK.format(field='access_token')}); echo $PAIRED_TOKEN",
        ),
        ("Send the store profile", put_store("PAIRED_TOKEN")),
    ]
    commands = [{"flow": "consent", "title": t, "command": c} for t, c in consent]
    if setup.pairing_code is not None:
        commands += [{"flow": "pairing", "title": t, "command": c} for t, c in pairing]
    return commands


def _print_text(out: dict[str, Any], settings: Settings) -> None:
    partner, merchant = out["partner"], out["merchant"]

    def say(text: str, markup: bool = True) -> None:
        # soft_wrap: a long secret must stay on one line to be copied whole.
        console.print(text, markup=markup, soft_wrap=True)

    say(f"[bold green]PartnerLink demo[/bold green] against {settings.public_url}\n")
    receipts = "on" if partner["ereceipt"] else "off"
    say(f"Partner   {partner['name']} (posType {partner['posType']}, e-receipts {receipts})")
    say(f"  client_id      {partner['clientId']}", markup=False)
    say(
        f"  client_secret  {partner['clientSecret']}  (new; earlier ones stop working)",
        markup=False,
    )
    say(f"Merchant  {merchant['email']}  password {merchant['password']}", markup=False)
    say(f"  console        {merchant['consoleUrl']}", markup=False)
    say(f"Profile   {out['profile']['name']}", markup=False)
    say(f"Store     {out['store']['name']} (manual, {out['store']['currency']})", markup=False)
    if out["pairingCode"] is None:
        say("Pairing   (pairing codes are not available in this build)")
    else:
        say(f"Pairing   code {out['pairingCode']}, valid until {out['pairingCodeExpiresAt']}")
    flow_titles = {"consent": "Consent-screen flow", "pairing": "Pairing-code flow"}
    current = ""
    for step in out["commands"]:
        if step["flow"] != current:
            current = step["flow"]
            say(f"\n[bold]{flow_titles[current]}[/bold] (paste into one shell)")
        # Plain output: Rich would wrap long lines and read [brackets] as markup.
        typer.echo(f"\n# {step['title']}\n{step['command']}")
