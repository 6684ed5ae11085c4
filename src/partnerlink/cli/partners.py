"""`partnerlink partners create|list|update|rotate-secret|rotate-webhook-secret`."""

from __future__ import annotations

from typing import Any

import typer

from partnerlink.cli.common import JsonOption, console, load_settings, print_json, unit_of_work
from partnerlink.cli.help_text import Commands
from partnerlink.partners.service import (
    list_partners,
    register_partner,
    rotate_client_secret,
    set_redirect_uris,
    set_requests_per_minute,
)
from partnerlink.webhooks.addresses import checked_webhook_url
from partnerlink.webhooks.registration import (
    partner_by_client_id,
    rotate_webhook_secret,
    set_webhook_url,
)

WebhookUrlOption = typer.Option(
    None,
    "--webhook-url",
    metavar="URL",
    help="Where the partner's webhook events are POSTed (http or https).",
)

RedirectUriOption = typer.Option(
    [],
    "--redirect-uri",
    metavar="URL",
    help="OAuth redirect URI the partner may be sent back to (repeatable; exact match).",
)
ClientIdArgument = typer.Argument(
    ..., metavar="CLIENT_ID", help="The partner's client id (plk_ci_...; partners list shows it)."
)

app = Commands(no_args_is_help=True)


@app.command("create")
def create(
    name: str = typer.Option(..., "--name", help="Partner's display name."),
    pos_type: str = typer.Option(
        ..., "--pos-type", metavar="SLUG", help="Slug naming this partner, e.g. acme-pos."
    ),
    ereceipt: bool = typer.Option(False, "--ereceipt", help="Partner offers SMS e-receipts."),
    frame_origin: list[str] = typer.Option(
        [],
        "--frame-origin",
        metavar="ORIGIN",
        help="Origin (scheme://host[:port]) allowed to frame the consent screen (repeatable).",
    ),
    webhook_url: str | None = WebhookUrlOption,
    redirect_uri: list[str] = RedirectUriOption,
    sandbox: bool = typer.Option(
        False, "--sandbox", help="A sandbox partner: _test_ credentials and tokens, test stores."
    ),
    json_output: bool = JsonOption,
) -> None:
    """Register an approved partner. The client secret is shown this once."""
    settings = load_settings()
    if webhook_url is not None:  # refused before anything is stored
        checked_webhook_url(webhook_url, allow_private=settings.webhook_allow_private)
    with unit_of_work(settings) as session:
        registered = register_partner(
            session,
            name=name,
            pos_type=pos_type,
            ereceipt=ereceipt,
            frame_origins=frame_origin,
            sandbox=sandbox,
            redirect_uris=redirect_uri,
        )
        partner = registered.partner
        out = {
            "id": partner.id,
            "name": partner.name,
            "posType": partner.pos_type,
            "clientId": partner.client_id,
            "clientSecret": registered.client_secret,
            "ereceipt": partner.ereceipt,
        }
        if partner.redirect_uris:
            out["redirectUris"] = list(partner.redirect_uris)
        if webhook_url is not None:
            webhook = set_webhook_url(session, settings, partner=partner, url=webhook_url)
            out["webhookUrl"] = webhook.url
            out["webhookSecret"] = webhook.secret
    if json_output:
        print_json(out)
        return
    console.print(f"Partner [bold]{out['name']}[/bold] registered (posType {out['posType']}).")
    console.print(f"  client_id      {out['clientId']}")
    console.print(f"  client_secret  {out['clientSecret']}")
    for uri in redirect_uri:
        console.print(f"  redirect_uri   {uri.strip()}")
    if webhook_url is not None:
        console.print(f"  webhook_url    {out['webhookUrl']}")
        console.print(f"  webhook_secret {out['webhookSecret']}")
    console.print(
        "[yellow]Secrets are shown this once; store them in the partner's backend.[/yellow]"
    )


@app.command("update")
def update(
    client_id: str = ClientIdArgument,
    webhook_url: str | None = WebhookUrlOption,
    redirect_uri: list[str] = RedirectUriOption,
    requests_per_minute: int | None = typer.Option(
        None,
        "--requests-per-minute",
        metavar="N",
        help="The partner's own quota of /v1 requests a minute (default: the setting's).",
    ),
    json_output: bool = JsonOption,
) -> None:
    """Change where the partner's webhook events go (its signing secret is kept; a partner
    that had none gets one, shown this once), replace its OAuth redirect URIs, or set its
    requests-per-minute quota."""
    if webhook_url is None and not redirect_uri and requests_per_minute is None:
        console.print(
            "[red]Give --webhook-url URL, --redirect-uri URL and/or --requests-per-minute N.[/red]"
        )
        raise typer.Exit(2)
    settings = load_settings()
    out: dict[str, Any] = {"clientId": client_id}
    with unit_of_work(settings) as session:
        if redirect_uri:
            partner = set_redirect_uris(session, client_id, redirect_uri)
            out["redirectUris"] = list(partner.redirect_uris)
        if requests_per_minute is not None:
            partner = partner_by_client_id(session, client_id)
            set_requests_per_minute(session, partner, requests_per_minute)
            out["requestsPerMinute"] = requests_per_minute
        if webhook_url is not None:
            partner = partner_by_client_id(session, client_id)
            webhook = set_webhook_url(session, settings, partner=partner, url=webhook_url)
            out["webhookUrl"] = webhook.url
            if webhook.secret:
                out["webhookSecret"] = webhook.secret
    if json_output:
        print_json(out)
        return
    for uri in out.get("redirectUris", []):
        console.print(f"Redirect URI of {client_id}: {uri}")
    if "requestsPerMinute" in out:
        console.print(f"Requests a minute of {client_id}: {requests_per_minute}")
    if "webhookUrl" in out:
        console.print(f"Webhook URL of {client_id}: {out['webhookUrl']}")
    if "webhookSecret" in out:
        console.print(f"  webhook_secret {out['webhookSecret']}")
        console.print("[yellow]The secret is shown this once.[/yellow]")


@app.command("rotate-webhook-secret")
def rotate_webhook(client_id: str = ClientIdArgument, json_output: bool = JsonOption) -> None:
    """Mint a new webhook signing secret; the old one keeps signing beside it for 24 hours."""
    settings = load_settings()
    with unit_of_work(settings) as session:
        partner = partner_by_client_id(session, client_id)
        secret = rotate_webhook_secret(session, settings, partner=partner)
    if json_output:
        print_json({"clientId": client_id, "webhookSecret": secret})
    else:
        console.print(f"New webhook_secret for {client_id}: {secret}")
        console.print(
            "[yellow]Events are signed with it from now on, and with the old one too for "
            "24 hours; shown this once.[/yellow]"
        )


@app.command("list")
def list_(json_output: bool = JsonOption) -> None:
    """List registered partners."""
    with unit_of_work() as session:
        partners = list_partners(session)
        rows = [
            {
                "id": p.id,
                "name": p.name,
                "posType": p.pos_type,
                "clientId": p.client_id,
                "ereceipt": p.ereceipt,
                "active": p.active,
            }
            for p in partners
        ]
        origins = [list(p.frame_origins or []) for p in partners]
        sandboxes = [bool(p.sandbox) for p in partners]
    if json_output:
        # Exactly the keys the operator contract lists; the origins are in the text form.
        print_json(rows)
    else:
        _print_partners(rows, origins, sandboxes)


def _print_partners(
    rows: list[dict[str, Any]], origins: list[list[str]], sandboxes: list[bool]
) -> None:
    """One block per partner, printed plainly: ids and origins stay whole, to be copied."""
    if not rows:
        typer.echo("No partners yet: partnerlink partners create --name N --pos-type SLUG")
    for number, (row, frame_origins, sandbox) in enumerate(
        zip(rows, origins, sandboxes, strict=True)
    ):
        state = ("active" if row["active"] else "inactive") + (", sandbox" if sandbox else "")
        receipts = "on" if row["ereceipt"] else "off"
        typer.echo(
            ("\n" if number else "") + f"{row['name']}  (posType {row['posType']}, "
            f"e-receipts {receipts}, {state})"
        )
        typer.echo(f"  client_id      {row['clientId']}")
        typer.echo(f"  frame origins  {', '.join(frame_origins) or '(none)'}")


@app.command("rotate-secret")
def rotate_secret(client_id: str = ClientIdArgument, json_output: bool = JsonOption) -> None:
    """Mint a new client secret; the old one stops working at once."""
    with unit_of_work() as session:
        secret = rotate_client_secret(session, client_id)
    if json_output:
        print_json({"clientId": client_id, "clientSecret": secret})
    else:
        console.print(f"New client_secret for {client_id}: {secret}")
        console.print("[yellow]The old secret no longer works.[/yellow]")
