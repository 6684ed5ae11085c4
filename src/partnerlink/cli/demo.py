"""`partnerlink demo` (filled in by the foundation capability)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(json_output: bool = typer.Option(False, "--json")) -> None:
    """Create a demo partner, merchant, profile and store, with ready-to-paste commands."""
    raise typer.Exit(1)
