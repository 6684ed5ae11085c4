"""`partnerlink merchants create`."""

from __future__ import annotations

import typer

from partnerlink.cli.common import JsonOption, console, print_json, unit_of_work
from partnerlink.cli.help_text import Commands
from partnerlink.merchant.accounts import create_merchant

app = Commands(no_args_is_help=True)


@app.command("create")
def create(
    email: str = typer.Option(
        ..., "--email", metavar="EMAIL", help="The email the merchant signs in with."
    ),
    password: str = typer.Option(
        ..., "--password", metavar="PASSWORD", help="The merchant's password (console and API)."
    ),
    name: str | None = typer.Option(
        None, "--name", metavar="NAME", help="The merchant's name, as the console shows it."
    ),
    json_output: bool = JsonOption,
) -> None:
    """Create a merchant account."""
    with unit_of_work() as session:
        merchant = create_merchant(session, email=email, password=password, name=name)
        out = {"id": merchant.id, "email": merchant.email}
    if json_output:
        print_json(out)
    else:
        console.print(f"Merchant {out['email']} created (id {out['id']}).")
