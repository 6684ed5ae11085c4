"""What every command shares: settings, a unit of work, output, and clean errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.db.migrate import upgrade
from partnerlink.problems import DomainError
from partnerlink.settings import Settings, get_settings

console = Console()
err_console = Console(stderr=True)

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")


def load_settings() -> Settings:
    return get_settings()


@contextmanager
def unit_of_work(settings: Settings | None = None) -> Iterator[Session]:
    """Migrates if needed, then yields a session committed once at the end."""
    settings = settings or load_settings()
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    session = make_sessionmaker(engine)()
    try:
        yield session
        session.commit()
    except DomainError as error:
        session.rollback()
        err_console.print(f"[red]error:[/red] {error.detail} ({error.code})")
        raise typer.Exit(1) from error
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
        engine.dispose()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str = "") -> None:
    table = Table(title=title or None)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*["" if row.get(c) is None else str(row.get(c)) for c in columns])
    console.print(table)
