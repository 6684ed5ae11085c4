"""`partnerlink destinations list [--json]`: every profile's ad-platform destinations and
their state; `partnerlink destinations sync ID`: sync one now, in this process."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from partnerlink.cli.common import (
    CommandFailed,
    JsonOption,
    load_settings,
    print_json,
    unit_of_work,
)
from partnerlink.cli.help_text import Commands
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.destinations.schemas import destination_json
from partnerlink.destinations.service import UnknownDestination, by_id, every_destination
from partnerlink.destinations.tasks import sync_now

app = Commands(no_args_is_help=True)


def _with_profile(destination: Any) -> dict[str, Any]:
    return {"profileId": destination.profile_id, **destination_json(destination)}


def _line(row: dict[str, Any]) -> str:
    sent = row["sent"]
    error = row["lastError"]["message"] if row["lastError"] else "-"
    what = row["segment"] if row["kind"] == "audience" else "sales"
    members = "-" if row["members"] is None else row["members"]  # a sales destination has none
    return (
        f"{row['id']}  profile {row['profileId']}  {row['platform']} {row['kind']} ({what})  "
        f"{row['status']}  last sync {row['lastSyncAt'] or 'never'}  members {members}  "
        f"added {sent['added']} removed {sent['removed']} events {sent['events']} "
        f"rejected {sent['rejected']}  last error {error}"
    )


@app.command("list")
def list_(json_output: bool = JsonOption) -> None:
    """List every destination (never its credentials)."""
    with unit_of_work() as session:
        rows = [_with_profile(d) for d in every_destination(session)]
    if json_output:
        print_json(rows)
        return
    if not rows:
        typer.echo("No ad-platform destinations.")
    for row in rows:
        typer.echo(_line(row))


@app.command("sync")
def sync(
    destination_id: str = typer.Argument(
        ..., metavar="DESTINATION_ID", help="The destination's id (destinations list shows it)."
    ),
    json_output: bool = JsonOption,
) -> None:
    """Sync one destination now (also one waiting for new credentials)."""
    settings = load_settings()
    with unit_of_work(settings) as session:
        try:
            by_id(session, destination_id)
        except UnknownDestination:
            raise CommandFailed(f"no destination {destination_id}", code="not_found") from None
    engine = make_engine(settings.database_url)
    try:
        sessions = make_sessionmaker(engine)
        with _kept_quiet() as causes:
            outcome = sync_now(sessions, settings, destination_id)
        with sessions() as session:
            row = _with_profile(by_id(session, destination_id))
    except UnknownDestination:  # disconnected while it synced
        raise CommandFailed(f"no destination {destination_id}", code="not_found") from None
    finally:
        engine.dispose()
    if outcome.result == "busy":
        raise CommandFailed("a worker is syncing this destination right now", code="busy")
    if outcome.result != "synced":
        raise _failed(destination_id, outcome.result, row["lastError"], causes)
    if json_output:
        print_json({"result": outcome.result, "destination": row})
        return
    typer.echo(f"{outcome.result}: {_line(row)}")


@contextmanager
def _kept_quiet() -> Iterator[list[str]]:
    """What the sync logs (an unexpected error's traceback) is kept from the terminal: the
    command says in its one line what failed, naming the unexpected error's type."""
    causes: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info and record.exc_info[0] is not None:
                causes.append(record.exc_info[0].__name__)

    logger = logging.getLogger("partnerlink.destinations")
    handler = Keep(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield causes
    finally:
        logger.removeHandler(handler)


def _failed(
    destination_id: str, result: str, error: dict[str, str] | None, causes: list[str]
) -> CommandFailed:
    if result == "lease_lost":
        return CommandFailed(
            f"the sync of destination {destination_id} was taken over by a worker before it "
            "finished; see `partnerlink destinations list`",
            code="busy",
        )
    said = (error or {}).get("message") or "the platform's answer was not recorded"
    cause = f" ({', '.join(causes)})" if causes else ""
    return CommandFailed(
        f"sync of destination {destination_id} failed{cause}: {said}",
        code=(error or {}).get("code") or "sync_failed",
    )
