"""`partnerlink sms list`: the e-receipt text messages, newest first."""

from __future__ import annotations

from typing import Any

import typer

from partnerlink.cli.common import JsonOption, print_blocks, unit_of_work
from partnerlink.cli.help_text import Commands
from partnerlink.receipts.queries import list_messages
from partnerlink.receipts.schemas import messages_json

app = Commands(no_args_is_help=True)


@app.command("list")
def list_(
    limit: int = typer.Option(
        20, "--limit", min=1, max=10_000, metavar="N", help="How many, newest first."
    ),
    json_output: bool = JsonOption,
) -> None:
    """List e-receipt messages (the `outbox` provider records them instead of sending)."""
    with unit_of_work() as session:
        messages = messages_json(list_messages(session, limit=limit))
    print_blocks(
        messages, _message_lines, json_output=json_output, none="No e-receipt messages yet."
    )


def _message_lines(message: dict[str, Any]) -> list[str]:
    return [
        f"{message['createdAt']}  to {message['to']}  order {message['orderId']}  "
        f"{message['status']}",
        f"  link  {message['link']}",
        f"  body  {message['body']}",
    ]
