"""Server processes: one uvicorn per process, each on its own SO_REUSEPORT socket.

uvicorn's own `--workers` shares one listening socket among its processes.
Whichever process wakes first accepts every connection waiting, so the
long-lived keep-alive connections of a few partners (or of a load generator)
can all land on one process while the others idle: measured with
bench/orders.py on PostgreSQL, one of two workers served all 32 connections
and the other none. With a socket of its own per process, bound with
SO_REUSEPORT, the kernel spreads new connections evenly across the processes,
as nginx's and gunicorn's reuse-port options do.

One process (or a system without SO_REUSEPORT) is one uvicorn on one plain socket.
Either way the sockets are bound here before any server starts, so `on_listening`
(the "serving at" banner) runs only once the port is ours, and a port another
program holds is one clear error (`CommandFailed`) instead of a banner followed by
uvicorn's traceback-free but late "address already in use".
"""

from __future__ import annotations

import errno
import logging
import multiprocessing
import os
import select
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any

import uvicorn

from partnerlink.cli.common import CommandFailed
from partnerlink.ops import mark_server_process_dead, start_multiprocess_metrics

log = logging.getLogger("partnerlink.serving")

BACKLOG = 2048  # uvicorn's default
STARTUP_FAILURE = 3  # uvicorn's exit status when the application fails to start


def run_server(
    app: str,
    *,
    host: str,
    port: int,
    workers: int,
    on_listening: Callable[[], None] = lambda: None,
    **options: Any,
) -> None:
    """Serves the ASGI app `app` ("module:attribute") with `workers` processes until stopped.

    `options` are uvicorn.Config's (factory, log_config, proxy_headers, ...).
    `on_listening` runs once the port is bound. A process that dies is replaced;
    SIGINT or SIGTERM stops them all gracefully.
    """
    if workers <= 1 or not hasattr(socket, "SO_REUSEPORT"):
        _serve_alone(app, host, port, on_listening, options)
        return
    try:
        # A plain bind first: SO_REUSEPORT alone would let a second `serve` share the port.
        _bound(host, port, reuse_port=False).close()
        # One listening socket per process, made and kept here: a second `serve` finds the
        # port taken from now on, and a replacement process takes over its predecessor's
        # socket with the connections waiting in it.
        sockets = [_listening(host, port, reuse_port=True) for _ in range(workers)]
    except OSError as error:
        raise _cannot_listen(host, port, error) from None
    on_listening()
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    # /metrics adds up every process: files in a directory of this run's, named in the
    # environment the processes inherit.
    metrics_dir = start_multiprocess_metrics()
    context = _preloaded_context(app)
    processes = [_start(context, app, host, port, sock, options) for sock in sockets]
    started = [time.monotonic()] * workers
    try:
        while not stopping.wait(0.5):
            for number, process in enumerate(processes):
                # A process that keeps failing at start is retried once a second, no faster.
                if not process.is_alive() and time.monotonic() - started[number] >= 1:
                    log.warning(
                        "server process %s exited (%s); starting another",
                        process.pid,
                        process.exitcode,
                    )
                    mark_server_process_dead(process.pid)
                    processes[number] = _start(context, app, host, port, sockets[number], options)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: uvicorn finishes what is in flight
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
            mark_server_process_dead(process.pid)
        shutil.rmtree(metrics_dir, ignore_errors=True)
        for sock in sockets:
            sock.close()


def _serve_alone(
    app: str, host: str, port: int, on_listening: Callable[[], None], options: dict[str, Any]
) -> None:
    """One server process on one socket, bound before the banner (as uvicorn.run would)."""
    try:
        sock = _listening(host, port, reuse_port=False)
    except OSError as error:
        raise _cannot_listen(host, port, error) from None
    on_listening()
    server = _SaysWhereItRuns(uvicorn.Config(app, host=host, port=port, **options))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it stopped on
        pass
    finally:
        sock.close()
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)


class _SaysWhereItRuns(uvicorn.Server):
    """uvicorn says "Uvicorn running on ..." only for a socket it bound itself; ours is
    bound beforehand, and operators (and the tests' live server) read that line."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and sockets:
            self._log_started_message(sockets)


def _cannot_listen(host: str, port: int, error: OSError) -> CommandFailed:
    reason = error.strerror or str(error)
    if error.errno == errno.EADDRINUSE:
        reason = "the port is in use (another server?); stop it, or choose another with --port"
    return CommandFailed(f"cannot listen on {host}:{port}: {reason}", code="port_unavailable")


def _start(
    context: Any,
    app: str,
    host: str,
    port: int,
    sock: socket.socket,
    options: dict[str, Any],
) -> BaseProcess:
    # The socket goes to the new process by file-descriptor passing (as uvicorn's own
    # workers get theirs).
    process: BaseProcess = context.Process(
        target=_serve_one, args=(app, host, port, sock, options, os.getpid()), daemon=False
    )
    process.start()
    return process


def _preloaded_context(app: str) -> Any:
    """Server processes forked from a forkserver that imported the app's module once.

    Not `fork` from this process: it has threads (the signal wait, the metrics) and the
    command line's state. Not `spawn`: each process, and each replacement of a dead one,
    would import everything again (~1.5 s of CPU). The forkserver is a fresh, single-threaded
    interpreter started by the first `start()`: it imports the preloaded module, then forks
    each server process from that state (gunicorn's `preload_app`, without its parent's
    threads). Its children stop when this process exits (`_die_with`), and it follows
    them.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([app.partition(":")[0], __name__])
    return context


def _serve_one(
    app: str, host: str, port: int, sock: socket.socket, options: dict[str, Any], parent: int
) -> None:
    """One server process, accepting on its own socket of the shared port."""
    _die_with(parent)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, **options)).run(sockets=[sock])


def _die_with(serve: int) -> None:
    """SIGTERM this process when `serve` exits, even by SIGKILL, so that no server process
    outlives it holding the port.

    `serve` is not our parent (the forkserver is), and the forkserver outlives `serve`
    while its children live (each holds the pipe whose closing would end it), so the
    parent-death signal would never come. A thread waits on a pidfd of `serve` instead
    (Linux 5.3+); elsewhere `serve`'s own shutdown still stops us.
    """
    try:
        watched = os.pidfd_open(serve)
    except ProcessLookupError:  # it exited before we started
        os.kill(os.getpid(), signal.SIGTERM)
        return
    except (OSError, AttributeError):
        return

    def wait_for_exit() -> None:
        select.select([watched], [], [])  # readable once the process has exited
        log.warning("serve (pid %s) exited; this server process stops too", serve)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait_for_exit, name="serve-watch", daemon=True).start()


def _listening(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    sock = _bound(host, port, reuse_port=reuse_port)
    sock.listen(BACKLOG)
    return sock


def _bound(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
