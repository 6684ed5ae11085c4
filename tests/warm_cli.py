"""A warm `partnerlink` command line for the tests: each command still runs in a
process of its own, forked from one that has already imported the command line.

The suite runs the command line a few hundred times. Each `python -m partnerlink`
process spent most of its CPU (~0.7 of ~1 s) importing SQLAlchemy, the settings, Typer
and the command's services before doing anything, and on a busy 2-core machine those
imports were a sixth of the suite's CPU. Here one process per test worker (the
"zygote", as Android's app launcher and Ruby's Spring preloader call it) imports all of
that once and then forks a child per command. The child is a real process: its own
environment, working directory, stdout and stderr (files, read back like
`subprocess.run(capture_output=True)`'s pipes), and exit status, with Python's own
handling of SystemExit, uncaught exceptions and interpreter exit (threads joined,
atexit handlers run, streams flushed). A fresh fork per command means no state carries
from one command to the next, and nothing is read from the environment at import time
(settings are read when a command runs).

What a child cannot differ in is what the interpreter reads when it starts: a command
whose environment changes one of `STARTUP_VARIABLES` runs as a plain `python -m
partnerlink` process instead. The black-box tests, the README's walkthrough and the
tests of the process itself (exit on a missing database, the server) start the real
`python -m partnerlink` every time.

    python tests/warm_cli.py    # the zygote: one JSON request a line on stdin
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Read by the interpreter at start-up (encoding of the standard streams, import paths,
# hashing, bytecode): a child cannot change them after the fork.
STARTUP_VARIABLES = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONWARNINGS",
    "PYTHONSAFEPATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)


def _startup_values(env: Mapping[str, str]) -> dict[str, str | None]:
    return {name: env.get(name) for name in STARTUP_VARIABLES}


class WarmCommandLine:
    """The tests' side: `run(args, env)` answers what `subprocess.run([python, -m,
    partnerlink, *args], env=env, capture_output=True, text=True)` would."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._out: Path | None = None
        # What the zygote started with (this process's environment, until it starts).
        self._startup: dict[str, str | None] | None = None

    def run(
        self, args: list[str], env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        if _startup_values(env) != (self._startup or _startup_values(os.environ)):
            return plain_process(args, env, timeout)
        # One command at a time per zygote, as the tests run them; a second thread
        # asking meanwhile (no test does) gets a cold process rather than waiting.
        if not self._lock.acquire(blocking=False):
            return plain_process(args, env, timeout)
        try:
            return self._warm(args, env, timeout)
        finally:
            self._lock.release()

    def _warm(
        self, args: list[str], env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "partnerlink", *args]
        zygote, out = self._started()
        stdout, stderr = out / "stdout", out / "stderr"
        request = {
            "args": args,
            "env": env,
            "cwd": os.getcwd(),
            "stdout": str(stdout),
            "stderr": str(stderr),
        }
        assert zygote.stdin is not None
        zygote.stdin.write(json.dumps(request).encode() + b"\n")
        zygote.stdin.flush()
        pid = self._reply(None)["pid"]
        try:
            status = self._reply(timeout)["status"]
        except TimeoutError:  # the command outlived its timeout, as subprocess.run's would
            os.kill(pid, signal.SIGKILL)
            self._reply(30)
            raise subprocess.TimeoutExpired(command, timeout) from None
        return subprocess.CompletedProcess(
            command,
            status,
            stdout.read_text(errors="replace"),
            stderr.read_text(errors="replace"),
        )

    def _started(self) -> tuple[subprocess.Popen[bytes], Path]:
        if self._out is None:
            self._out = Path(tempfile.mkdtemp(prefix="partnerlink-warm-cli-"))
        if self._zygote is None or self._zygote.poll() is not None:
            self._pending = b""
            self._startup = _startup_values(os.environ)
            self._zygote = subprocess.Popen(
                [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        return self._zygote, self._out

    def _reply(self, timeout: float | None) -> dict[str, Any]:
        """The zygote's next line; TimeoutError after `timeout` seconds without one."""
        assert self._zygote is not None and self._zygote.stdout is not None
        fd = self._zygote.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("the warm command line's zygote exited")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        if self._zygote is not None and self._zygote.poll() is None:
            assert self._zygote.stdin is not None
            self._zygote.stdin.close()
            self._zygote.wait(timeout=30)
        if self._out is not None:
            shutil.rmtree(self._out, ignore_errors=True)


def plain_process(
    args: list[str], env: dict[str, str], timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m partnerlink <args>` started cold, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "partnerlink", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# The zygote ----------------------------------------------------------------------------


def _preload() -> None:
    """Imports the command line and every command's module, as a run of each would."""
    cli = importlib.import_module("partnerlink.cli")
    for command in cli.PartnerlinkCommand.commands_by_name.values():
        importlib.import_module(command.module)


def _child(request: dict[str, Any]) -> None:
    """Runs in the forked child: becomes `python -m partnerlink <args>`; never returns."""
    status = 1
    try:
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        status = _run_as_main(request["args"])
    finally:
        os._exit(status)


def _run_as_main(args: list[str]) -> int:
    """What `python -m partnerlink` does from its first line to its exit status."""
    package = importlib.import_module("partnerlink")
    sys.argv = [str(Path(str(package.__file__)).parent / "__main__.py"), *args]
    try:
        runpy.run_module("partnerlink", run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as leaving:
        status = _exit_status(leaving.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # joins threads, as interpreter exit does
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120  # Python's status when flushing at exit fails
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _serve_requests() -> None:
    # `python -m` puts the working directory first on the path, not this file's folder.
    sys.path[0] = os.getcwd()
    _preload()
    gc.collect()
    gc.freeze()  # the children share the preloaded pages instead of copying them at each GC
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, wait_status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(wait_status)}), flush=True)


if __name__ == "__main__":
    _serve_requests()
