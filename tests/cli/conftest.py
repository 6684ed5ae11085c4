"""The command line, run as a real `python -m partnerlink` process on the test database."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import LiveServer

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(live_env: dict[str, str]) -> RunCli:
    """Runs `partnerlink <args>` with the test settings (no server is started)."""
    return LiveServer(live_env).cli


@pytest.fixture
def cli_json(cli: RunCli) -> Callable[..., Any]:
    """Runs a command with --json, expects success and answers the parsed output."""

    def run(*args: str) -> Any:
        done = cli(*args, "--json")
        assert done.returncode == 0, done.stderr + done.stdout
        return json.loads(done.stdout)

    return run
