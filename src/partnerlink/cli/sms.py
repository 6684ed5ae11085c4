"""`partnerlink sms list`: the e-receipt text messages, newest first."""

from __future__ import annotations

import typer

from partnerlink.cli.common import JsonOption, print_json, unit_of_work
from partnerlink.receipts.queries import list_messages

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_(
    limit: int = typer.Option(20, "--limit", min=1, max=10_000, help="How many, newest first."),
    json_output: bool = JsonOption,
) -> None:
    """List e-receipt messages (the `outbox` provider records them instead of sending)."""
    with unit_of_work() as session:
        messages = list_messages(session, limit=limit)
    if json_output:
        print_json(messages)
        return
    if not messages:
        typer.echo("No e-receipt messages yet.")
        return
    # One block per message, printed plainly: the link must stay whole to be opened or
    # copied, whatever the terminal's width (a table would cut or wrap it).
    for number, message in enumerate(messages):
        if number:
            typer.echo("")
        typer.echo(
            f"{message['createdAt']}  to {message['to']}  order {message['orderId']}  "
            f"{message['status']}"
        )
        typer.echo(f"  link  {message['link']}")
        typer.echo(f"  body  {message['body']}")
