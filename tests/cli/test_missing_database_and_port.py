"""A newcomer's first hour (CONTRACT §12, §5): a command run against a database that does
not exist says which one it looked for instead of creating it, and `serve` says it is
serving only once its port is bound."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.cli.test_errors_and_output import SERVER_URL, run_with_database
from tests.conftest import ON_POSTGRES, free_port
from tests.warm_cli import plain_process

# The commands that must not create a database, with arguments that would otherwise succeed.
READ_OR_WRITE_COMMANDS = [
    ["partners", "list"],
    ["partners", "create", "--name", "Acme POS", "--pos-type", "acme"],
    ["merchants", "create", "--email", "a@example.com", "--password", "correct horse 42"],
    ["sms", "list"],
    ["demo"],
]


def run_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`partnerlink <args>` in `folder` with the default (relative) database URL."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PARTNERLINK_DATABASE_URL", "PARTNERLINK_DATA_DIR")
    }
    env["PARTNERLINK_SECRET_KEY"] = "test-secret-key-not-for-production"
    return plain_process(list(args), env, timeout=120, cwd=folder)


@pytest.mark.parametrize("command", READ_OR_WRITE_COMMANDS, ids=" ".join)
def test_a_command_in_another_folder_names_the_missing_database_and_creates_none(
    tmp_path: Path, command: list[str]
) -> None:
    done = run_in(tmp_path, *command)

    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"no database at {tmp_path / 'data' / 'partnerlink.db'}" in lines[0]
    assert "(database_not_found)" in lines[0]
    assert not (tmp_path / "data" / "partnerlink.db").exists()
    assert done.stdout == ""


def test_the_missing_database_with_json_is_a_json_error(tmp_path: Path) -> None:
    done = run_in(tmp_path, "partners", "list", "--json")

    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["code"] == "database_not_found"
    assert str(tmp_path / "data" / "partnerlink.db") in out["error"]
    assert not (tmp_path / "data").exists()


def test_db_upgrade_creates_the_database_and_then_commands_use_it(tmp_path: Path) -> None:
    assert run_in(tmp_path, "db", "upgrade").returncode == 0
    assert (tmp_path / "data" / "partnerlink.db").exists()

    done = run_in(tmp_path, "partners", "list", "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.fixture
def unmigrated_database_url(tmp_path: Path) -> str:
    """A database that exists but has no schema: an empty SQLite file, or a new PostgreSQL
    database."""
    if not ON_POSTGRES:
        (tmp_path / "blank.db").touch()
        return f"sqlite:///{tmp_path / 'blank.db'}"
    name = f"plk_blank_{uuid.uuid4().hex[:8]}"
    admin = create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(SERVER_URL).set(database=name).render_as_string(hide_password=False)


def _tables(database_url: str) -> list[str]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                query = "SELECT name FROM sqlite_master WHERE type = 'table'"
            else:
                query = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            return list(conn.execute(text(query)).scalars())
    finally:
        engine.dispose()


def test_a_database_without_schema_asks_for_db_upgrade_and_is_left_alone(
    unmigrated_database_url: str, tmp_path: Path
) -> None:
    try:
        done = run_with_database(
            unmigrated_database_url,
            tmp_path,
            "partners",
            "create",
            "--name",
            "A",
            "--pos-type",
            "a",
        )

        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        shown = make_url(unmigrated_database_url).render_as_string(hide_password=True)
        assert f"the database {shown} is not migrated: run partnerlink db upgrade" in lines[0]
        assert _tables(unmigrated_database_url) == []
    finally:
        if ON_POSTGRES:
            admin = create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                name = make_url(unmigrated_database_url).database
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_on_a_busy_port_says_so_in_one_line_and_never_that_it_is_serving(
    tmp_path: Path, workers: str
) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        done = run_with_database(
            f"sqlite:///{tmp_path / 'busy.db'}",
            tmp_path,
            "serve",
            "--port",
            str(port),
            "--workers",
            workers,
        )

    assert done.returncode == 1
    assert "serving at" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in lines[0]
    assert "(port_unavailable)" in lines[0]


def _banner(tmp_path: Path, port: int, env: dict[str, str]) -> str:
    """What `serve --port` prints once it listens (up to the "Next:" line); then stopped."""
    server = subprocess.Popen(
        [sys.executable, "-m", "partnerlink", "serve", "--port", str(port)],
        env={
            **{k: v for k, v in os.environ.items() if k != "PARTNERLINK_PUBLIC_URL"},
            "PARTNERLINK_DATABASE_URL": f"sqlite:///{tmp_path / 'banner.db'}",
            "PARTNERLINK_DATA_DIR": str(tmp_path),
            "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
            "COLUMNS": "400",  # one banner line a line
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    try:
        assert server.stdout is not None
        for line in server.stdout:
            lines.append(line)
            if line.startswith("Next:"):
                break
    finally:
        server.terminate()
        server.wait(timeout=30)
    return "".join(lines)


def test_serve_on_another_port_says_where_it_serves_and_that_links_need_the_public_url(
    tmp_path: Path,
) -> None:
    port = free_port()
    banner = _banner(tmp_path, port, {})
    assert f"is serving at http://127.0.0.1:{port}\n" in banner
    assert f"Merchant console  http://127.0.0.1:{port}/merchant" in banner
    assert "PARTNERLINK_PUBLIC_URL is its default, http://127.0.0.1:8000" in banner
    assert f"set PARTNERLINK_PUBLIC_URL=http://127.0.0.1:{port}" in banner

    # Set (as behind a proxy, or on purpose): the banner names it and says nothing more.
    port = free_port()
    banner = _banner(tmp_path, port, {"PARTNERLINK_PUBLIC_URL": "https://plk.example.com"})
    assert "is serving at https://plk.example.com\n" in banner
    assert "PARTNERLINK_PUBLIC_URL" not in banner
