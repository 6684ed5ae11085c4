"""`partnerlink db upgrade`."""

from __future__ import annotations

from partnerlink.cli.common import JsonOption, console, load_settings, migrate, print_json
from partnerlink.cli.help_text import Commands

app = Commands(no_args_is_help=True)


@app.command("upgrade")
def upgrade(json_output: bool = JsonOption) -> None:
    """Apply database migrations."""
    done = migrate(load_settings())
    status = "upgraded" if done.applied else "up to date"
    if json_output:
        print_json({"status": status, "revision": done.after, "previousRevision": done.before})
    elif done.applied:
        console.print(
            f"Database upgraded from revision {done.before or '(empty)'} to {done.after}."
        )
    else:
        console.print(f"Database is up to date (revision {done.after}).")
