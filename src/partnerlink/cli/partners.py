"""`partnerlink partners create|list|rotate-secret`."""

from __future__ import annotations

from typing import Any

import typer

from partnerlink.cli.common import JsonOption, console, print_json, unit_of_work
from partnerlink.partners.service import list_partners, register_partner, rotate_client_secret

app = typer.Typer(no_args_is_help=True)


@app.command("create")
def create(
    name: str = typer.Option(..., "--name", help="Partner's display name."),
    pos_type: str = typer.Option(
        ..., "--pos-type", help="Slug naming this partner, e.g. acme-pos."
    ),
    ereceipt: bool = typer.Option(False, "--ereceipt", help="Partner offers SMS e-receipts."),
    frame_origin: list[str] = typer.Option(
        [], "--frame-origin", help="Origin allowed to frame the consent screen (repeatable)."
    ),
    json_output: bool = JsonOption,
) -> None:
    """Register an approved partner. The client secret is shown this once."""
    with unit_of_work() as session:
        registered = register_partner(
            session, name=name, pos_type=pos_type, ereceipt=ereceipt, frame_origins=frame_origin
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
    if json_output:
        print_json(out)
        return
    console.print(f"Partner [bold]{out['name']}[/bold] registered (posType {out['posType']}).")
    console.print(f"  client_id      {out['clientId']}")
    console.print(f"  client_secret  {out['clientSecret']}")
    console.print(
        "[yellow]The secret is shown this once; store it in the partner's backend.[/yellow]"
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
    if json_output:
        # Exactly the keys the operator contract lists; the origins are in the text form.
        print_json(rows)
    else:
        _print_partners(rows, origins)


def _print_partners(rows: list[dict[str, Any]], origins: list[list[str]]) -> None:
    """One block per partner, printed plainly: ids and origins stay whole, to be copied."""
    if not rows:
        typer.echo("No partners yet: partnerlink partners create --name N --pos-type SLUG")
    for number, (row, frame_origins) in enumerate(zip(rows, origins, strict=True)):
        state = "active" if row["active"] else "inactive"
        receipts = "on" if row["ereceipt"] else "off"
        typer.echo(
            ("\n" if number else "") + f"{row['name']}  (posType {row['posType']}, "
            f"e-receipts {receipts}, {state})"
        )
        typer.echo(f"  client_id      {row['clientId']}")
        typer.echo(f"  frame origins  {', '.join(frame_origins) or '(none)'}")


@app.command("rotate-secret")
def rotate_secret(client_id: str, json_output: bool = JsonOption) -> None:
    """Mint a new client secret; the old one stops working at once."""
    with unit_of_work() as session:
        secret = rotate_client_secret(session, client_id)
    if json_output:
        print_json({"clientId": client_id, "clientSecret": secret})
    else:
        console.print(f"New client_secret for {client_id}: {secret}")
        console.print("[yellow]The old secret no longer works.[/yellow]")
