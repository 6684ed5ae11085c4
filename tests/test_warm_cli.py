"""The warm command line (tests/warm_cli.py) answers as a plain `python -m partnerlink`."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LiveServer, free_port
from tests.warm_cli import WarmCommandLine, plain_process


@pytest.fixture
def warm() -> Iterator[WarmCommandLine]:
    cli = WarmCommandLine()
    yield cli
    cli.close()


@pytest.mark.parametrize(
    "args",
    [
        ["partners", "list", "--json"],
        ["partners", "list"],
        ["partners", "rotate-secret", "nobody", "--json"],  # an error, as JSON on stdout
        ["partners", "rotate-secret", "nobody"],  # an error on stderr
        ["no-such-command"],  # a usage error: status 2
        ["--help"],
        ["db", "upgrade"],
    ],
)
def test_status_stdout_and_stderr_are_a_plain_process_s(
    warm: WarmCommandLine, live_env: dict[str, str], args: list[str]
) -> None:
    env = LiveServer(live_env).env
    expected = plain_process(args, env, timeout=300)
    got = warm.run(args, env, timeout=300)
    assert (got.returncode, got.stdout, got.stderr) == (
        expected.returncode,
        expected.stdout,
        expected.stderr,
    )


def test_each_command_has_its_own_environment_and_working_directory(
    warm: WarmCommandLine, live_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = LiveServer(live_env).env
    assert warm.run(["partners", "list", "--json"], env, timeout=300).returncode == 0

    # No database URL: the default, relative SQLite path, read in the working directory.
    monkeypatch.chdir(tmp_path)
    without_url = {name: value for name, value in env.items() if name != "PARTNERLINK_DATABASE_URL"}
    got = warm.run(["partners", "list"], without_url, timeout=300)
    assert got.returncode != 0
    assert f"read in {tmp_path}" in got.stderr.replace("\n", "")
    assert (got.returncode, got.stderr) == (
        (
            expected := plain_process(["partners", "list"], without_url, 300, cwd=tmp_path)
        ).returncode,
        expected.stderr,
    )

    # The next command is a fresh fork: the environment of the one before is gone.
    assert warm.run(["partners", "list", "--json"], env, timeout=300).returncode == 0


def test_a_command_past_its_timeout_is_killed_and_the_next_one_runs(
    warm: WarmCommandLine, live_env: dict[str, str]
) -> None:
    env = LiveServer(live_env).env
    with pytest.raises(subprocess.TimeoutExpired):
        warm.run(["serve", "--port", str(free_port())], env, timeout=3)
    assert warm.run(["partners", "list", "--json"], env, timeout=300).stdout.startswith("[")
