"""`partnerlink db upgrade`."""

from __future__ import annotations

import typer

from partnerlink.cli.common import JsonOption, console, load_settings, print_json
from partnerlink.db.migrate import upgrade as run_upgrade

app = typer.Typer(no_args_is_help=True)


@app.command("upgrade")
def upgrade(json_output: bool = JsonOption) -> None:
    """Apply database migrations."""
    settings = load_settings()
    run_upgrade(settings.database_url)
    if json_output:
        print_json({"status": "upgraded"})
    else:
        console.print("Database is up to date.")
