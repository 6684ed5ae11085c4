"""The command line's failures (one line, or one JSON object with --json; exit non-zero), an
unreachable database, `db upgrade`, `sms list` and the partners' frame origins."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner
from partnerlink.settings import Settings
from tests.cli.conftest import RunCli
from tests.conftest import ON_POSTGRES, TEST_DATABASE_URL, free_port
from tests.factories import create_connected_store
from tests.orders.builders import order_body, post
from tests.warm_cli import plain_process

# The PostgreSQL server the tests may use: the test server's, else the usual local one.
SERVER_URL = Settings(
    database_url=TEST_DATABASE_URL if ON_POSTGRES else "postgresql://postgres@127.0.0.1:5432/x"
).database_url
PASSWORD = "hunter2-not-shown"
CliJson = Callable[..., Any]


def run_with_database(
    database_url: str, tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PARTNERLINK_DATABASE_URL": database_url,
        "PARTNERLINK_DATA_DIR": str(tmp_path),
        "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
    }
    return plain_process(list(args), env, timeout=120)


def _missing_database_url() -> str:
    name = f"plk_missing_{uuid.uuid4().hex[:8]}"
    return (
        make_url(SERVER_URL)
        .set(password=PASSWORD, database=name)
        .render_as_string(hide_password=False)
    )


def _unanswered_url() -> str:
    return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/partnerlink"


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["partners", "list"]])
def test_a_database_that_does_not_exist_is_one_clear_line(
    tmp_path: Path, command: list[str]
) -> None:
    url = _missing_database_url()
    name = make_url(url).database

    done = run_with_database(url, tmp_path, *command)

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"createdb -h {make_url(url).host}" in lines[0]
    assert f" {name}" in lines[0]
    assert make_url(url).render_as_string(hide_password=True) in lines[0]
    assert PASSWORD not in done.stderr + done.stdout


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["db", "upgrade"]])
def test_a_server_that_does_not_answer_is_one_clear_line(
    tmp_path: Path, command: list[str]
) -> None:
    url = _unanswered_url()

    done = run_with_database(url, tmp_path, *command)

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "is the server running" in done.stderr
    assert f"127.0.0.1:{make_url(url).port}" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout


def test_an_unreachable_database_with_json_is_a_json_error(tmp_path: Path) -> None:
    done = run_with_database(_unanswered_url(), tmp_path, "partners", "list", "--json")

    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["code"] == "database_unavailable"
    assert "is the server running" in out["error"]
    assert PASSWORD not in done.stdout + done.stderr


@pytest.fixture
def empty_database_url(tmp_path: Path) -> Iterator[str]:
    """A database with no schema yet: a new SQLite file, or a new PostgreSQL database."""
    if not ON_POSTGRES:
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    name = f"plk_empty_{uuid.uuid4().hex[:8]}"
    admin = create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(SERVER_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_db_upgrade_says_upgraded_then_up_to_date(empty_database_url: str, tmp_path: Path) -> None:
    first = run_with_database(empty_database_url, tmp_path, "db", "upgrade", "--json")
    second = run_with_database(empty_database_url, tmp_path, "db", "upgrade", "--json")
    as_text = run_with_database(empty_database_url, tmp_path, "db", "upgrade")

    assert first.returncode == second.returncode == as_text.returncode == 0
    upgraded, current = json.loads(first.stdout), json.loads(second.stdout)
    assert upgraded["status"] == "upgraded" and upgraded["previousRevision"] is None
    assert current == {
        "status": "up to date",
        "revision": upgraded["revision"],
        "previousRevision": upgraded["revision"],
    }
    assert "up to date" in as_text.stdout and upgraded["revision"] in as_text.stdout


def test_usage_errors_with_json_are_json(cli: RunCli) -> None:
    done = cli("partners", "create", "--pos-type", "acme-pos", "--json")

    assert done.returncode == 2
    out = json.loads(done.stdout)
    assert out["code"] == "usage_error"
    assert "--name" in out["error"]


def test_domain_errors_without_json_are_one_line_on_stderr(cli: RunCli) -> None:
    done = cli("partners", "rotate-secret", "plk_ci_nope")

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == "error: no partner with client id plk_ci_nope (unknown_client)"


def test_a_missing_touch_file_with_json_is_a_json_error(cli: RunCli, tmp_path: Path) -> None:
    done = cli("touches", "import", str(tmp_path / "nope.jsonl"), "--json")

    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "error": f"no such file: {tmp_path / 'nope.jsonl'}",
        "code": "no_such_file",
    }


@pytest.mark.parametrize(
    "origin", ["not a url", "pos.acme.test", "https://pos.acme.test/consent", "ftp://pos.acme.test"]
)
def test_partners_create_refuses_a_frame_origin_that_is_not_an_origin(
    cli: RunCli, session: Session, origin: str
) -> None:
    as_json = cli(
        "partners", "create", "--name", "Acme", "--pos-type", "acme-pos",
        "--frame-origin", origin, "--json",
    )  # fmt: skip
    as_text = cli(
        "partners", "create", "--name", "Acme", "--pos-type", "acme-pos", "--frame-origin", origin
    )

    assert as_json.returncode == as_text.returncode == 1
    out = json.loads(as_json.stdout)
    assert out["code"] == "invalid_field" and repr(origin) in out["error"]
    assert "https://pos.example.com" in as_text.stderr and "Traceback" not in as_text.stderr
    assert session.query(Partner).count() == 0


def test_partners_list_shows_the_frame_origins(cli: RunCli, cli_json: CliJson) -> None:
    cli_json(
        "partners", "create", "--name", "Acme POS", "--pos-type", "acme-pos",
        "--frame-origin", "https://POS.acme.test/", "--frame-origin", "http://localhost:8080",
    )  # fmt: skip

    listed = cli_json("partners", "list")
    table = cli("partners", "list")

    assert "frameOrigins" not in listed[0]  # --json keeps exactly the contract's keys
    assert "https://pos.acme.test, http://localhost:8080" in table.stdout


def test_sms_list_shows_the_whole_link_and_the_body(
    cli: RunCli, cli_json: CliJson, client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session, ereceipt=True, green_invoices=True)
    order_id = "ORDER-" + "7" * 60  # the link is well past 80 columns
    assert post(client, shop.auth, order_body(order_id)).status_code == 200
    [message] = cli_json("sms", "list")
    assert len(message["link"]) > 100

    done = cli("sms", "list")

    assert done.returncode == 0
    assert message["link"] in done.stdout.splitlines()[1]
    assert message["body"].splitlines()[0] in done.stdout
    assert message["to"] in done.stdout
