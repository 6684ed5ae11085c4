"""Test fixtures shared by every domain.

The database is built by running the Alembic migrations (so migrations are
tested too): a SQLite file by default, or, when PARTNERLINK_TEST_DATABASE_URL
names a PostgreSQL server, a fresh database created on it for this run and
dropped afterwards. Every test starts from empty tables.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from partnerlink.app import create_app
from partnerlink.db.base import Base
from partnerlink.db.migrate import upgrade
from partnerlink.security.passwords import CHEAP_FOR_TESTS
from partnerlink.settings import Settings
from tests.warm_cli import WarmCommandLine, plain_process

# argon2's cheapest parameters for every password the suite hashes, in this process and
# in the live servers it starts (they inherit the environment): the production default
# costs 64 MiB and ~0.1 s of CPU a hash (tests/security checks that default still holds).
os.environ[CHEAP_FOR_TESTS] = "1"

TEST_DATABASE_URL = os.environ.get("PARTNERLINK_TEST_DATABASE_URL", "")
ON_POSTGRES = TEST_DATABASE_URL.startswith(("postgres", "postgresql"))


# The heaviest test files, heaviest first (seconds of setup, call and teardown, measured
# on a loaded 2-core machine): `make test` runs each file on one xdist worker, handing
# out files in collection order, so a heavy file collected last kept one worker busy
# long after the other had finished. Files not listed keep their order, after these.
SLOW_FIRST = (
    "tests/cli/test_serving.py",  # 347
    "tests/cli/test_errors_and_output.py",  # 336
    "tests/cli/test_webhook_commands.py",  # 280
    "tests/cli/test_partner_and_merchant_commands.py",  # 278
    "tests/foundation_live/test_metrics_across_processes.py",  # 254
    "tests/cli/test_demo.py",  # 247
    "tests/blackbox/test_cli.py",  # 235
    "tests/customers/test_crash_safety.py",  # 215
    "tests/blackbox/test_rate_limits.py",  # 194
    "tests/browser/test_consent_browser.py",  # 160
    "tests/cli/test_redirect_uri_commands.py",  # 154
    "tests/blackbox/test_concurrency.py",  # 142
    "tests/customers/test_streaming_and_concurrency.py",  # 140
    "tests/blackbox/test_odd_input.py",  # 132
    "tests/orders/test_concurrency.py",  # 130
    "tests/blackbox/test_expiry.py",  # 113
    "tests/cli/test_missing_database_and_port.py",  # 108
    "tests/stores/test_put_store.py",  # 107
    "clients/typescript/tests/test_typescript_client.py",  # 105
    "tests/blackbox/test_customers.py",  # 102
    "tests/blackbox/test_merchant_api.py",  # 99
    "tests/connect/test_live_server.py",  # 93
    "tests/browser/test_console_browser.py",  # 79
    "tests/test_readme.py",  # 78
)
# Folders whose files share a package-scoped server: they stay together (a worker that
# left the folder and came back would start the server again), ranked by their first file.
KEPT_TOGETHER = ("tests/blackbox/",)


# The command line, warm (tests/warm_cli.py): one per test worker, started on first use.
WARM_CLI = WarmCommandLine()


def pytest_sessionfinish(session: pytest.Session) -> None:
    WARM_CLI.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(SLOW_FIRST)}
    last = len(SLOW_FIRST)

    def path_of(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    def group_of(path: str) -> str:
        return next((folder for folder in KEPT_TOGETHER if path.startswith(folder)), path)

    group_rank: dict[str, int] = {}
    for item in items:
        path = path_of(item)
        group = group_of(path)
        group_rank[group] = min(group_rank.get(group, last), rank.get(path, last))
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(
        key=lambda item: (
            group_rank[group_of(path_of(item))],
            rank.get(path_of(item), last),
            order[id(item)],
        )
    )


def _psycopg_url(url: str) -> str:
    return Settings(database_url=url).database_url


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not ON_POSTGRES:
        path = tmp_path_factory.mktemp("db") / "partnerlink-test.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        yield url
        return
    server = make_url(_psycopg_url(TEST_DATABASE_URL))
    name = f"plk_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = server.set(database=name).render_as_string(hide_password=False)
    upgrade(url)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# One engine per database for emptying it, without a pool: no connection stays open
# between tests (some tests drop, rename or migrate databases).
_EMPTYING_ENGINES: dict[str, Engine] = {}

# PostgreSQL's tables whose identity sequence has counted since it last restarted.
_COUNTED_SINCE_RESTART = """
SELECT DISTINCT t.relname
FROM pg_sequences s
JOIN pg_class sc ON sc.relname = s.sequencename AND sc.relnamespace = s.schemaname::regnamespace
JOIN pg_depend d ON d.objid = sc.oid AND d.deptype IN ('a', 'i')
    AND d.refclassid = 'pg_class'::regclass
JOIN pg_class t ON t.oid = d.refobjid
WHERE s.schemaname = current_schema() AND s.last_value IS NOT NULL
"""


def _empty_all_tables(url: str) -> None:
    """Empties every table, restarting PostgreSQL's identities as if all were truncated.

    Only the tables that hold rows (or whose identity has counted) are touched: a
    TRUNCATE of every table costs PostgreSQL about a second on a busy machine, per
    test, while most tests leave most tables empty.
    """
    engine = _EMPTYING_ENGINES.get(url)
    if engine is None:
        engine = _EMPTYING_ENGINES[url] = create_engine(url, poolclass=NullPool)
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    holding_rows = " UNION ALL ".join(
        f"SELECT '{table}' FROM (SELECT 1 FROM {table} LIMIT 1) AS rows_of_{table}"
        for table in tables
    )
    with engine.begin() as conn:
        touched = {row[0] for row in conn.execute(text(holding_rows))}
        if engine.dialect.name == "postgresql":
            touched |= {row[0] for row in conn.execute(text(_COUNTED_SINCE_RESTART))}
            touched &= set(tables)
            if touched:
                conn.execute(
                    text(f"TRUNCATE {', '.join(sorted(touched))} RESTART IDENTITY CASCADE")
                )
        else:
            for table in tables:
                if table in touched:
                    conn.execute(text(f"DELETE FROM {table}"))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    _empty_all_tables(database_url)
    return Settings(
        database_url=database_url,
        public_url="http://testserver",
        secret_key="test-secret-key-not-for-production",
        data_dir=tmp_path,
        run_worker=False,
    )


@pytest.fixture
def app(settings: Settings):  # type: ignore[no-untyped-def]
    application = create_app(settings)
    yield application
    # Its pools close with the test, not when the garbage collector reaches them: on
    # PostgreSQL the idle connections of apps waiting for collection (up to ~45 a test
    # worker, its `app`s made without a client) took the server past max_connections
    # late in the suite on a fast machine.
    application.state.engine.dispose()
    application.state.read_engine.dispose()


@pytest.fixture
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def session(app) -> Iterator[Session]:  # type: ignore[no-untyped-def]
    """A session for arranging data; commit what the app must see."""
    db_session: Session = app.state.sessionmaker()
    try:
        yield db_session
    finally:
        db_session.rollback()
        db_session.close()


def free_port() -> int:
    """A port nothing listens on, kept from every other program for a minute.

    Picking a free port and binding it later races with everything else on the
    machine (another test run, an outgoing connection, a bind to port 0). So the
    port is left in TIME_WAIT: the kernel hands it to no bind(0) nor connect()
    and refuses it to a plain bind, while a server binding it with SO_REUSEADDR
    (uvicorn and `partnerlink serve` do) gets it at once. A connection to it is
    refused until a server listens.
    """
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        address = listener.getsockname()
        with socket.create_connection(address, timeout=30):
            accepted, _ = listener.accept()
            accepted.close()  # closed first: this side of the connection waits in TIME_WAIT
        return int(address[1])


# What a server that found its port taken after all says before it exits: uvicorn's
# single process, `partnerlink serve --workers N`.
PORT_TAKEN = ("address already in use", "cannot listen on")
START_TIMEOUT = 300  # seconds: 2-3 s on an idle machine, over a minute on a very busy one


class LiveServer:
    """A real `partnerlink serve` process on a free port.

    `url` and `port` are known before `start()` (and may be put in `env`); should
    the port be taken by the time the server binds it, `start()` moves the server
    to another port, replacing the old address in `env` too.
    """

    def __init__(self, env: dict[str, str], workers: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PARTNERLINK_PUBLIC_URL": self.url, **env}
        self.workers = workers
        self.log_path = Path(env["PARTNERLINK_DATA_DIR"]) / "server.log"
        self.log: BinaryIO | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Runs the command line against the same database and settings, in a process
        forked from a warm one (tests/warm_cli.py)."""
        return WARM_CLI.run(list(args), self.env, timeout=300)

    def cold_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`cli` as a plain `python -m partnerlink` process, imports and all."""
        return plain_process(list(args), self.env, timeout=300)

    def start(self) -> None:
        try:
            for _ in range(5):
                if self._launch():
                    return
                self._move_to(free_port())
        except BaseException:
            # A server that gave up on here may still come up later: it must not go on
            # serving (and running the background worker on) this run's database.
            self.stop()
            raise
        raise RuntimeError(f"every port tried was taken: {self.logs()}")

    def _launch(self) -> bool:
        """Starts the process: True once it serves on its port, False if the port was taken."""
        self.log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "partnerlink",
                "serve",
                "--port",
                str(self.port),
                "--workers",
                str(self.workers),
            ],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.close()
                if any(taken in self.logs().lower() for taken in PORT_TAKEN):
                    return False
                raise RuntimeError(f"server exited: {self.logs()}")
            # Only a server that bound the port itself counts: /healthz alone could be
            # answered by another program's server on the port.
            if self._bound() and self._healthy():
                return True
            time.sleep(0.1)
        raise RuntimeError(f"server did not start in {START_TIMEOUT} s: {self.logs()}")

    def _bound(self) -> bool:
        """What the server logs once it holds the port: uvicorn's one process says so;
        `serve --workers N` binds every socket before it starts any server process."""
        logs = self.logs()
        if self.workers > 1:
            return "Started server process" in logs
        return f"Uvicorn running on {self.url} " in logs

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def _move_to(self, port: int) -> None:
        old = re.compile(re.escape(self.url) + r"(?!\d)")
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.env = {name: old.sub(self.url, value) for name, value in self.env.items()}

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.log:
            self.log.close()

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def live_env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    return {
        "PARTNERLINK_DATABASE_URL": settings.database_url,
        "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
        "PARTNERLINK_DATA_DIR": str(tmp_path),
    }


@pytest.fixture
def live_server(live_env: dict[str, str]) -> Iterator[LiveServer]:
    server = LiveServer(live_env)
    server.start()
    try:
        yield server
    finally:
        server.stop()
