"""What every command shares: settings, a unit of work, output, and clean errors.

Every failure of every command ends the same way (`CommandGroup`): one line on
stderr, `error: <message> (<code>)`, or with `--json` one JSON object on stdout,
`{"error": <message>, "code": <word>}`; the exit status is non-zero either way.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import typer
from rich.console import Console
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Session
from typer._click import Command, Context  # typer's own click: the one its commands run on
from typer.core import TyperGroup
from typer.main import get_group

from partnerlink.audiences.legacy_digests import key_legacy_digests_at_start
from partnerlink.db.engine import committed_session, make_engine, make_sessionmaker
from partnerlink.db.migrate import Migration, current_revision, upgrade, upgrade_from
from partnerlink.orders.intake.barrier import settle_journal
from partnerlink.problems import DomainError
from partnerlink.settings import Settings, get_settings

console = Console()
err_console = Console(stderr=True)

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")
_WANTS_JSON = "partnerlink.json"


class CommandFailed(Exception):
    """A command cannot do what it was asked; `message` says why and what to do."""

    def __init__(self, message: str, *, code: str = "failed") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class LazyCommand:
    """A command imported only when it runs: `module`'s Typer `app` holds it. With a
    `group_help`, the command is that whole app (a group of subcommands, this its line
    in `--help`); without, it is the app's command of the same name."""

    module: str
    group_help: str | None


class CommandGroup(TyperGroup):
    """The `partnerlink` command: loads each command when it runs (a subclass names them
    in `commands_by_name`), and turns every failure into one line, or one JSON object."""

    commands_by_name: ClassVar[dict[str, LazyCommand]] = {}

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *self.commands_by_name]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        lazy = self.commands_by_name.get(cmd_name)
        if lazy is None:
            return super().get_command(ctx, cmd_name)
        group = get_group(importlib.import_module(lazy.module).app)
        if lazy.group_help is None:
            return group.get_command(ctx, cmd_name)
        group.name, group.help = cmd_name, lazy.group_help
        return group

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Context | None = None,
        **extra: Any,
    ) -> Context:
        options = args[: args.index("--")] if "--" in args else args
        wants_json = "--json" in options
        context = super().make_context(info_name, args, parent, **extra)
        context.meta[_WANTS_JSON] = wants_json
        return context

    def invoke(self, ctx: Context) -> Any:
        as_json = bool(ctx.meta.get(_WANTS_JSON))
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except typer.TyperException as error:  # usage: a missing option, a bad value
            if not as_json:
                raise
            report_error(error.format_message(), "usage_error", as_json=True)
            raise typer.Exit(error.exit_code) from error
        except DomainError as error:
            report_error(error.detail, error.code, as_json=as_json)
        except CommandFailed as error:
            report_error(error.message, error.code, as_json=as_json)
        except DBAPIError as error:
            report_error(database_problem(error), "database_unavailable", as_json=as_json)
        except Exception as error:
            if as_json:
                # The traceback still goes to stderr (Python prints it): it is a bug to report.
                report_error(f"unexpected {type(error).__name__}", "internal_error", as_json=True)
            raise
        raise typer.Exit(1)


def report_error(message: str, code: str, *, as_json: bool) -> None:
    if as_json:
        print_json({"error": message, "code": code})
    else:
        err_console.print(
            f"[red]error:[/red] {message} ({code})", markup=True, highlight=False, soft_wrap=True
        )


def load_settings() -> Settings:
    return get_settings()


def migrate(settings: Settings, revision: str | None = None) -> Migration:
    """Brings the database to the newest schema; a database out of reach is one clear error."""
    try:
        url = settings.database_url
        # `revision`: the caller read it already (migrate_existing); else it is read here.
        migration = upgrade(url) if revision is None else upgrade_from(url, revision)
        # What migration 0015 could not key without the service key (CONTRACT §12).
        engine = make_engine(settings.database_url)
        try:
            key_legacy_digests_at_start(make_sessionmaker(engine), settings.signing_key)
        finally:
            engine.dispose()
        return migration
    except DBAPIError as error:
        raise CommandFailed(
            database_problem(error, settings.database_url), code="database_unavailable"
        ) from None
    except OSError as error:  # the SQLite file's directory cannot be made
        shown = make_url(settings.database_url).render_as_string(hide_password=True)
        raise CommandFailed(
            f"cannot open {shown}: {error.strerror or error} ({error.filename}); "
            "check that its directory can be created and written",
            code="database_unavailable",
        ) from None
    except (ArgumentError, NoSuchModuleError, ImportError):  # unknown scheme, or no driver
        raise _invalid_database_url() from None


def _invalid_database_url() -> CommandFailed:
    return CommandFailed(
        "PARTNERLINK_DATABASE_URL is not a database URL PartnerLink can use (SQLite or "
        "PostgreSQL: sqlite:///./data/partnerlink.db, postgresql://user@host/dbname)",
        code="invalid_database_url",
    )


def database_problem(error: DBAPIError, database_url: str | None = None) -> str:
    """One line saying which database (password hidden) failed, why, and what to do."""
    url_text = database_url or load_settings().database_url
    try:
        url = make_url(url_text)
    except ArgumentError:
        return "PARTNERLINK_DATABASE_URL is not a database URL"
    shown = url.render_as_string(hide_password=True)
    reason = str(error.orig or error).strip()
    if url.password:
        reason = reason.replace(url.password, "***")
    host = f"{url.host or 'localhost'}:{url.port or 5432}"
    missing = re.search(r'database "([^"]+)" does not exist', reason)
    if missing:
        return (
            f"cannot open {shown}: the database {missing.group(1)!r} does not exist on {host}; "
            f"create it with: createdb -h {url.host or 'localhost'} -p {url.port or 5432}"
            f"{f' -U {url.username}' if url.username else ''} {missing.group(1)}"
        )
    if re.search(r"Connection refused|failed to resolve host|timeout|No route to host", reason):
        return (
            f"cannot reach the database server of {shown} ({host}): is the server running "
            "and accepting connections there?"
        )
    if re.search(r"password authentication failed|role .* does not exist", reason):
        return (
            f"the database server refused the user of {shown}: check the user name and "
            "password in PARTNERLINK_DATABASE_URL"
        )
    if "unable to open database file" in reason:
        return f"cannot open {shown}: check that its directory exists and is writable"
    last_line = reason.splitlines()[-1] if reason else type(error).__name__
    return f"cannot use the database {shown}: {last_line.strip()}"


def migrate_existing(settings: Settings) -> Migration:
    """`migrate` for the commands that must not create a database (CONTRACT §12).

    Only `serve`, `worker` and `db upgrade` create one. Any other command run from
    the wrong folder (the default SQLite path is relative) or against the wrong URL
    would otherwise make an empty database and, say, print credentials that the
    running server has never heard of. An existing database of an older revision is
    still brought up to date.
    """
    try:
        url = make_url(settings.database_url)
        sqlite_file = _sqlite_file(url)
        missing = sqlite_file is not None and not sqlite_file.exists()
        revision = None if missing else current_revision(settings.database_url)
    except (ArgumentError, NoSuchModuleError, ImportError):
        raise _invalid_database_url() from None
    shown = url.render_as_string(hide_password=True)
    if missing:
        raise CommandFailed(
            f"no database at {sqlite_file} (PARTNERLINK_DATABASE_URL is {shown}, read in "
            f"{Path.cwd()}): run this command where `partnerlink serve` runs, or set "
            "PARTNERLINK_DATABASE_URL to its database",
            code="database_not_found",
        )
    if revision is None:
        raise CommandFailed(
            f"the database {shown} is not migrated: run partnerlink db upgrade "
            "(or partnerlink serve) first",
            code="database_not_migrated",
        )
    return migrate(settings, revision)


def _sqlite_file(url: URL) -> Path | None:
    """The absolute path of a SQLite database file (None for another database)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database or "").resolve()


@contextmanager
def unit_of_work(settings: Settings | None = None) -> Iterator[Session]:
    """Migrates an existing database if needed, then yields a session committed once at
    the end; a database that does not exist is an error, never created (migrate_existing)."""
    settings = settings or load_settings()
    migrate_existing(settings)
    engine = make_engine(settings.database_url)
    try:
        with committed_session(make_sessionmaker(engine)) as session:
            # Orders acknowledged under load (orders/intake/journal.py) first.
            settle_journal(session, settings)
            yield session
    finally:
        engine.dispose()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_blocks(
    rows: Sequence[dict[str, Any]],
    lines: Callable[[dict[str, Any]], list[str]],
    *,
    json_output: bool,
    none: str,
) -> None:
    """A listing: JSON, or one block of `lines(row)` a row, blocks apart by a blank line,
    printed plainly (a link must stay whole, whatever the terminal's width: a table
    would cut or wrap it); `none` when there is nothing to list."""
    if json_output:
        print_json(rows)
        return
    if not rows:
        typer.echo(none)
        return
    for number, row in enumerate(rows):
        if number:
            typer.echo("")
        for line in lines(row):
            typer.echo(line)
