"""`partnerlink demo`: a demo partner, merchant, profile and store, with commands to paste.

Running it again reuses what exists, and prints the same client secret and merchant
password: variables copied from an earlier run keep working. Secrets are stored only as
digests, so the demo's two are derived from the service key (an HMAC of the record's id
under a key of their own) rather than stored: every run computes them again. Where the
stored digest does not match (a demo made before, `partners rotate-secret`, a new
service key), the demo sets its own value and says that the earlier one no longer works.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import typer
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.cli.common import JsonOption, console, load_settings, print_json, unit_of_work
from partnerlink.cli.help_text import Commands
from partnerlink.kit.digests import hmac_sha256
from partnerlink.merchant.accounts import create_merchant, set_password
from partnerlink.merchant.manual_stores import create_manual_store, set_green_invoices
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.merchant.profiles import create_profile
from partnerlink.pairing.service import reserve_pairing_code
from partnerlink.partners.models import Partner
from partnerlink.partners.service import register_partner, set_client_secret
from partnerlink.security.passwords import verify_password
from partnerlink.security.secrets import CLIENT_SECRET_PREFIX, matches, sign
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

# `... | pick FIELD` prints one field of a JSON answer (python3 is everywhere jq is not).
# Anything else (an error body, no answer) ends it with a one-line message on stderr and exit
# status 1, never a traceback, so the step that failed says why.
_PICK_FUNCTION = (
    "pick() { python3 -c 'import json,sys; t=sys.stdin.read(); "
    'd=json.loads(t) if t.lstrip().startswith("{") else {}; v=d.get(sys.argv[1]); '
    'print(v) if v else sys.exit("no " + sys.argv[1] + " in the answer: " + (t.strip() or "-"))\' '
    '"$1"; }'
)


@dataclass
class DemoSetup:
    partner: Partner
    client_secret: str
    merchant: Merchant
    password: str
    profile: Profile
    store: Store
    pairing_code: int
    pairing_expires_at: str
    # Which credentials this run had to change ("clientSecret", "password"): those an
    # earlier run printed no longer work.
    renewed: list[str] = field(default_factory=list)


def demo_credential(signing_key: bytes, what: str, record_id: str) -> str:
    """The demo's `what` ("client secret", "password") of a record (named by its client id
    or email): the same on every run under the same service key, and known to no one
    without it."""
    key = hmac_sha256(signing_key, b"partnerlink demo credentials")
    return sign(key, f"{what} {record_id}")


app = Commands()


@app.command(
    "demo",
    short_help="A demo partner, merchant, profile and store, with ready-to-paste commands.",
)
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
    """Creates or reuses every demo record, with the demo's own credentials."""
    renewed: list[str] = []
    partner = session.scalar(select(Partner).where(Partner.pos_type == DEMO_POS_TYPE))
    made = partner is None
    if partner is None:
        partner = register_partner(
            session,
            name=DEMO_PARTNER_NAME,
            pos_type=DEMO_POS_TYPE,
            ereceipt=True,
            frame_origins=[DEMO_FRAME_ORIGIN],
        ).partner  # its random secret is replaced below, before anyone saw it
    client_secret = CLIENT_SECRET_PREFIX + demo_credential(
        settings.signing_key, "client secret", partner.client_id
    )
    if not matches(client_secret, partner.client_secret_hash):
        set_client_secret(session, partner=partner, client_secret=client_secret)
        if not made:
            renewed.append("clientSecret")

    # 16 characters, as a person types it in the console's sign-in form.
    password = demo_credential(settings.signing_key, "password", DEMO_EMAIL)[:16]
    merchant = session.scalar(select(Merchant).where(Merchant.email == DEMO_EMAIL))
    if merchant is None:
        merchant = create_merchant(session, email=DEMO_EMAIL, password=password, name="Demo")
    elif not verify_password(password, merchant.password_hash):
        set_password(session, merchant=merchant, password=password)
        renewed.append("password")

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
    # E-receipts on, so that an order the walkthrough sends through the paired store texts
    # its customer (`partnerlink sms list` shows it), as the consent flow's approval does.
    set_green_invoices(session, merchant_id=merchant.id, store_id=store.id, enabled=True)

    code, expires_at = _reserve_code(session, settings=settings, merchant=merchant, store=store)
    session.flush()
    return DemoSetup(
        partner, client_secret, merchant, password, profile, store, code, expires_at, renewed
    )


def _reserve_code(
    session: Session, *, settings: Settings, merchant: Merchant, store: Store
) -> tuple[int, str]:
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
            "greenInvoices": setup.store.green_invoices,
        },
        "pairingCode": setup.pairing_code,
        "pairingCodeExpiresAt": setup.pairing_expires_at,
        "renewed": setup.renewed,
        "commands": demo_commands(setup, settings=settings),
    }


def demo_commands(setup: DemoSetup, *, settings: Settings) -> list[dict[str, str]]:
    """The commands of both flows: one block per step, each pasted whole into one shell.

    The names are the README walkthrough's: BASE, CID, CS, IT, AT, RT.
    """
    merchant_login = json.dumps({"email": setup.merchant.email, "password": setup.password})
    commands = [
        {"flow": "consent", "title": title, "command": "\n".join(lines)}
        for title, lines in _consent_steps(setup, settings=settings, merchant_login=merchant_login)
    ]
    commands.append(
        {
            "flow": "pairing",
            "title": f"Redeem the pairing code of {setup.store.name} (once; "
            "`partnerlink demo` reserves a new one), then send the store profile",
            "command": "\n".join(
                [
                    f"export BASE='{settings.public_url}'",
                    _PICK_FUNCTION,
                    'AT=$(curl -s -X POST "$BASE/v1/auth/integration/pair" '
                    f"-H 'Content-Type: application/json' "
                    f"-d '{{\"code\": {setup.pairing_code}}}' "
                    f'| pick access_token); echo "$AT"',
                    _PUT_STORE,
                ]
            ),
        }
    )
    return commands


_STORE_PROFILE = json.dumps(
    {
        "storeName": "Demo Bistro (from the POS)",
        "storeAddress": DEMO_STORE_ADDRESS,
        "storeCity": "Springfield",
        "storeCountryCode": DEMO_STORE_COUNTRY,
        "storePhoneNumber": "+12175550100",
    }
)
_PUT_STORE = (
    'curl -s -X PUT "$BASE/v1/stores" -H "Authorization: Bearer $AT" '
    f"-H 'Content-Type: application/json' -d '{_STORE_PROFILE}'; echo"
)
_CREDENTIALS = "client_id=$CID&client_secret=$CS"


def _consent_steps(
    setup: DemoSetup, *, settings: Settings, merchant_login: str
) -> list[tuple[str, list[str]]]:
    status = f'"$BASE/v1/auth/integration?{_CREDENTIALS}&integration_token=$IT"'
    return [
        (
            "Step 1, the partner's backend: the variables, an integration token, the consent URL",
            [
                f"export BASE='{settings.public_url}' CID='{setup.partner.client_id}' "
                f"CS='{setup.client_secret}'",
                _PICK_FUNCTION,
                f'IT=$(curl -s -X POST "$BASE/v1/auth/integration?{_CREDENTIALS}" '
                f'| pick integrationToken); echo "$IT"',
                f'echo "{settings.effective_connect_url}/?client_id=$CID&integration_token=$IT"',
            ],
        ),
        (
            "Step 2, the merchant: open that URL in a browser, sign in as "
            f"{setup.merchant.email} (password {setup.password}), pick the profile "
            f'"{setup.profile.name}" (a new store is made for this partner) and confirm. '
            "Or paste this block: the merchant API does the same without a browser",
            [
                'MS=$(curl -s -X POST "$BASE/merchant/api/sessions" '
                f"-H 'Content-Type: application/json' -d '{merchant_login}' "
                f"| pick sessionToken)",
                'curl -s -X POST "$BASE/merchant/api/consents/$IT/approve" '
                "-H \"Authorization: Bearer $MS\" -H 'Content-Type: application/json' "
                f'-d \'{{"clientId": "\'"$CID"\'", "profileId": "{setup.profile.id}", '
                '"greenInvoices": true}\'; echo',
            ],
        ),
        (
            "Step 3, the partner's backend, once the merchant approved: wait for `finished`, "
            "exchange the token (once), refresh the access token, send the store profile",
            [
                f"while curl -s {status} | grep -q '\"pending\"'; do "
                'echo "waiting for the merchant..."; sleep 3; done',
                f"curl -s {status}; echo",
                f'TOKENS=$(curl -s "$BASE/v1/auth/integration/token?{_CREDENTIALS}'
                '&integration_token=$IT"); echo "$TOKENS"',
                'AT=$(echo "$TOKENS" | pick accessToken)',
                'RT=$(echo "$TOKENS" | pick refreshToken)',
                f'AT=$(curl -s -X POST "$BASE/v1/auth/token?{_CREDENTIALS}'
                '&code=$RT&grant_type=refresh_token" '
                f'| pick accessToken); echo "$AT"',
                _PUT_STORE,
            ],
        ),
    ]


def _print_text(out: dict[str, Any], settings: Settings) -> None:
    partner, merchant = out["partner"], out["merchant"]

    def say(text: str, markup: bool = True) -> None:
        # soft_wrap: a long secret must stay on one line to be copied whole.
        console.print(text, markup=markup, soft_wrap=True)

    say(f"[bold green]PartnerLink demo[/bold green] against {settings.public_url}\n")
    receipts = "on" if partner["ereceipt"] else "off"
    say(f"Partner   {partner['name']} (posType {partner['posType']}, e-receipts {receipts})")
    say(f"  client_id      {partner['clientId']}", markup=False)
    say(f"  client_secret  {partner['clientSecret']}{_kept(out, 'clientSecret')}", markup=False)
    say(
        f"Merchant  {merchant['email']}  password {merchant['password']}{_kept(out, 'password')}",
        markup=False,
    )
    say(f"  console        {merchant['consoleUrl']}", markup=False)
    say(f"Profile   {out['profile']['name']}", markup=False)
    store_receipts = "on" if out["store"]["greenInvoices"] else "off"
    say(
        f"Store     {out['store']['name']} (manual, {out['store']['currency']}, "
        f"e-receipts {store_receipts})",
        markup=False,
    )
    say(f"Pairing   code {out['pairingCode']}, valid until {out['pairingCodeExpiresAt']}")
    flow_titles = {"consent": "Consent-screen flow", "pairing": "Pairing-code flow"}
    current = ""
    for step in out["commands"]:
        if step["flow"] != current:
            current = step["flow"]
            say(
                f"\n[bold]{flow_titles[current]}[/bold] "
                "(paste each block whole, in order, into one shell)"
            )
        # Plain output: Rich would wrap long lines and read [brackets] as markup.
        typer.echo(f"\n# {step['title']}\n{step['command']}")


def _kept(out: dict[str, Any], credential: str) -> str:
    if credential in out["renewed"]:
        return "  (renewed: the value an earlier run printed no longer works)"
    return "  (the same on every run)"
