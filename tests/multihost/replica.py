"""A PostgreSQL primary and a hot standby on two hosts (network namespaces), the standby
made the way an operator makes one: `pg_basebackup -R` from the primary, then streaming
replication. Each is a private cluster in a temporary directory, run as the `postgres`
user (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.multihost.netns import SERVICES_ADDRESS, Forwarder, Host

PORT = 5432


def postgres_bin() -> Path | None:
    """The server programs of the machine's PostgreSQL, if it has them."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_basebackup"))
    return found[-1].parent if found else None


def _as_postgres(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        host.command("runuser", "-u", "postgres", "--", *args),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stdout}{done.stderr}")
    return done


@dataclass
class Cluster:
    host: Host
    data: Path

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host.address}:{PORT}/postgres"

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host.address, port=PORT, user="postgres", dbname="postgres", autocommit=True
        )

    def scalar(self, sql: str) -> object:
        with self.connect() as conn:
            row = conn.execute(sql).fetchone()
            return row[0] if row else None


def _start(bin_dir: Path, host: Host, data: Path) -> None:
    _as_postgres(
        host, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(data / "log"), "-w", "start"
    )


def _configure(data: Path, host: Host, socket_dir: Path) -> None:
    with (data / "postgresql.conf").open("a", encoding="utf-8") as conf:
        conf.write(
            f"listen_addresses = '{host.address}'\nport = {PORT}\n"
            f"unix_socket_directories = '{socket_dir}'\n"
            "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n"
            "max_connections = 60\nshared_buffers = 16MB\nfsync = off\n"
        )
    with (data / "pg_hba.conf").open("w", encoding="utf-8") as hba:
        hba.write("local all all trust\nhost all all 0.0.0.0/0 trust\n")
        hba.write("host replication all 0.0.0.0/0 trust\n")


@contextlib.contextmanager
def primary_and_standby(
    primary_host: Host, standby_host: Host
) -> Iterator[tuple[Cluster, Cluster]]:
    bin_dir = postgres_bin()
    assert bin_dir, "PostgreSQL's server programs (pg_basebackup, pg_ctl) are not installed"
    root = Path(tempfile.mkdtemp(prefix="plk-replica-", dir="/tmp"))
    root.chmod(0o755)
    primary_dir, standby_dir = root / "primary", root / "standby"
    shutil.chown(root, "postgres", "postgres")
    started: list[tuple[Host, Path]] = []
    forwarder: Forwarder | None = None
    try:
        _as_postgres(
            primary_host,
            str(bin_dir / "initdb"),
            "-D",
            str(primary_dir),
            "-A",
            "trust",
            "-U",
            "postgres",
        )
        _configure(primary_dir, primary_host, root)
        _start(bin_dir, primary_host, primary_dir)
        started.append((primary_host, primary_dir))
        # The standby's host reaches the primary's through the root namespace.
        forwarder = Forwarder(SERVICES_ADDRESS, (primary_host.address, PORT))
        _as_postgres(
            standby_host, str(bin_dir / "pg_basebackup"), "-h", SERVICES_ADDRESS,
            "-p", str(forwarder.port), "-U", "postgres", "-D", str(standby_dir), "-R", "-X", "stream",
        )  # fmt: skip
        # The copied settings, but its own address and socket (a later line wins).
        with (standby_dir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                f"listen_addresses = '{standby_host.address}'\n"
                f"unix_socket_directories = '{standby_dir}'\n"
            )
        _start(bin_dir, standby_host, standby_dir)
        started.append((standby_host, standby_dir))
        yield Cluster(primary_host, primary_dir), Cluster(standby_host, standby_dir)
    finally:
        for host, data in reversed(started):
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                _as_postgres(
                    host, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"
                )
        if forwarder:
            forwarder.close()
        shutil.rmtree(root, ignore_errors=True)


def wait_replayed(primary: Cluster, standby: Cluster, timeout: float = 60) -> None:
    """Until the standby has replayed everything the primary had written when called."""
    target = primary.scalar("SELECT pg_current_wal_lsn()::text")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        caught_up = standby.scalar(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")
        if caught_up:
            return
        time.sleep(0.1)
    raise AssertionError(f"the standby did not replay up to {target} in {timeout} s")
