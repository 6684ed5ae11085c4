"""`partnerlink webhooks list [--failed]`: the webhook delivery log, newest first."""

from __future__ import annotations

import typer

from partnerlink.cli.common import JsonOption, print_json, unit_of_work
from partnerlink.webhooks.log import delivery_log

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_(
    failed: bool = typer.Option(
        False, "--failed", help="Only events given up, or failing and waiting for a retry."
    ),
    limit: int = typer.Option(50, "--limit", min=1, max=10_000, help="How many, newest first."),
    json_output: bool = JsonOption,
) -> None:
    """List webhook events and how their delivery went."""
    with unit_of_work() as session:
        rows = delivery_log(session, failed_only=failed, limit=limit)
    if json_output:
        print_json(rows)
        return
    if not rows:
        typer.echo("No webhook events." if not failed else "No failed webhook deliveries.")
        return
    for number, row in enumerate(rows):
        if number:
            typer.echo("")
        typer.echo(
            f"{row['createdAt']}  {row['type']}  {row['eventId']}  to {row['clientId']}  "
            f"{row['status']}  attempts {row['attempts']}"
        )
        last = row["lastStatusCode"] or row["lastError"] or "-"
        when = row["deliveredAt"] or row["nextAttemptAt"]
        typer.echo(
            f"  {row['url']}  last answer {last}  {'at' if row['deliveredAt'] else 'next'} {when}"
        )
