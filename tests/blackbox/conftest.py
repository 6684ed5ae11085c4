"""Black-box fixtures: a real `partnerlink serve`, the command line, and HTTP only.

Nothing here imports the application's own code: every fact is learned the way
an outside test suite would learn it (status codes, bodies, CLI output, logs).
The default server and its partners and merchants are shared by the whole
folder (package scope); servers with other settings are module-scoped. Every
test builds its own profile and store, so tests do not see each other's data.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.blackbox.box import Box, Merchant, Partner
from tests.conftest import LiveServer

# Pairing failures come from one address (127.0.0.1) across a whole module: a
# generous budget keeps the default server from locking itself out; the
# budget itself is tested on a server of its own.
DEFAULT_ENV = {
    "PARTNERLINK_PAIRING_FAILURES_PER_IP": "10000/minute",
    "PARTNERLINK_PAIRING_FAILURES_GLOBAL": "100000/hour",
}


def start_box(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]
) -> Iterator[Box]:
    """Starts a server; "{url}" in an env value becomes the server's own address."""
    data_dir: Path = tmp_path_factory.mktemp("blackbox")
    server = LiveServer(
        {
            "PARTNERLINK_DATABASE_URL": database_url,
            "PARTNERLINK_SECRET_KEY": f"blackbox-{uuid.uuid4().hex}",
            "PARTNERLINK_DATA_DIR": str(data_dir),
        }
    )
    server.env.update({k: v.replace("{url}", server.url) for k, v in env.items()})
    server.start()
    box = Box(server)
    try:
        yield box
    finally:
        box.close()
        server.stop()


@pytest.fixture(scope="package")
def box(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    """The default-settings server, shared by every module of this folder."""
    yield from start_box(database_url, tmp_path_factory, DEFAULT_ENV)


@dataclass
class Cast:
    """Partners and merchants made once with the command line (each call costs a process)."""

    plain: Partner
    plain2: Partner
    ereceipt: Partner
    merchant: Merchant
    other: Merchant


@pytest.fixture(scope="package")
def cast(box: Box) -> Cast:
    plain, plain2 = box.new_partner(), box.new_partner()
    ereceipt = box.new_partner(ereceipt=True)
    return Cast(plain, plain2, ereceipt, box.new_merchant(), box.new_merchant())


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
