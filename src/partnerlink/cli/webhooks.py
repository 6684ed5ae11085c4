"""`partnerlink webhooks list [--failed]`: the webhook delivery log, newest first;
`partnerlink webhooks retry EVENT_ID`: a failed or pending event is due now."""

from __future__ import annotations

from typing import Any

import typer

from partnerlink.cli.common import JsonOption, print_blocks, print_json, unit_of_work
from partnerlink.cli.help_text import Commands
from partnerlink.webhooks.queries import delivery_log
from partnerlink.webhooks.schedule import retry_event
from partnerlink.webhooks.schemas import delivery_log_json

app = Commands(no_args_is_help=True)


@app.command("list")
def list_(
    failed: bool = typer.Option(
        False, "--failed", help="Only events given up, or failing and waiting for a retry."
    ),
    limit: int = typer.Option(
        50, "--limit", min=1, max=10_000, metavar="N", help="How many, newest first."
    ),
    json_output: bool = JsonOption,
) -> None:
    """List webhook events and how their delivery went."""
    with unit_of_work() as session:
        rows = delivery_log_json(delivery_log(session, failed_only=failed, limit=limit))
    none = "No webhook events." if not failed else "No failed webhook deliveries."
    print_blocks(rows, _event_lines, json_output=json_output, none=none)


def _event_lines(row: dict[str, Any]) -> list[str]:
    last = row["lastStatusCode"] or row["lastError"] or "-"
    when = row["deliveredAt"] or row["nextAttemptAt"]
    return [
        f"{row['createdAt']}  {row['type']}  {row['eventId']}  to {row['clientId']}  "
        f"{row['status']}  attempts {row['attempts']}",
        f"  {row['url']}  last answer {last}  {'at' if row['deliveredAt'] else 'next'} {when}",
    ]


@app.command("retry")
def retry(
    event_id: str = typer.Argument(
        ..., metavar="EVENT_ID", help="The event's id (webhooks list shows it)."
    ),
    json_output: bool = JsonOption,
) -> None:
    """Make a failed or pending webhook event due now (the worker sends it at once)."""
    with unit_of_work() as session:
        event = retry_event(session, event_id)
        out = {
            "eventId": event.event_id,
            "status": event.status,
            "nextAttemptAt": event.next_attempt_at.isoformat(),
        }
    if json_output:
        print_json(out)
        return
    typer.echo(f"{out['eventId']} is due now; the worker sends it to the partner's URL.")
