"""A lean load generator: keep-alive HTTP/1.1 on raw asyncio streams, and CPU accounting.

Cheap per request (no HTTP client library in the loop), so that on a 2-core
machine it takes as little as possible from the server it measures. Used by
bench/orders.py for both the real server and the ceiling.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Run:
    seconds: float
    latencies: list[float]
    statuses: Counter[int]
    server_cpu_seconds: float = 0.0
    # CPU of whatever `also` counted over the same window (bench/capacity.py: PostgreSQL's).
    other_cpu_seconds: float = 0.0
    # CPU of each of `parts` over the same window, by name (bench/orders.py).
    parts_cpu_seconds: dict[str, float] = field(default_factory=dict)
    # Requests sent, warm-up included: where the next run goes on in `requests`.
    sent: int = 0

    @classmethod
    def combined(cls, runs: list[Run]) -> Run:
        """Several measured windows as one: their lengths, answers and CPU added up."""
        parts: dict[str, float] = {}
        for run in runs:
            for name, seconds in run.parts_cpu_seconds.items():
                parts[name] = parts.get(name, 0.0) + seconds
        return cls(
            seconds=sum(run.seconds for run in runs),
            latencies=[latency for run in runs for latency in run.latencies],
            statuses=sum((run.statuses for run in runs), Counter()),
            server_cpu_seconds=sum(run.server_cpu_seconds for run in runs),
            other_cpu_seconds=sum(run.other_cpu_seconds for run in runs),
            parts_cpu_seconds=parts,
            sent=sum(run.sent for run in runs),
        )

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else 0.0


async def _drive(
    port: int, requests: list[bytes], connections: int, warmup: float, seconds: float, first: int
) -> Run:
    cursor = iter(range(first, 10**12))
    start = time.perf_counter() + warmup
    stop = start + seconds
    latencies: list[float] = []
    statuses: Counter[int] = Counter()

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while (now := time.perf_counter()) < stop:
                writer.write(requests[next(cursor) % len(requests)])
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                if now >= start:
                    latencies.append(time.perf_counter() - now)
                    statuses[status] += 1
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(connections)))
    return Run(seconds, latencies, statuses, sent=next(cursor) - first)


def drive(
    port: int,
    requests: list[bytes],
    connections: int,
    warmup: float,
    seconds: float,
    server: int | None = None,
    also: Callable[[], float] | None = None,
    parts: dict[str, Callable[[], float]] | None = None,
    first: int = 0,
) -> Run:
    """Runs the load, from request number `first` of `requests` on (taken in turn, round
    and round); with `server` (a pid), also the CPU its processes used while measured,
    with `also` (a reading of CPU seconds so far) that reading's growth over the window,
    and with `parts` the same for each named reading."""
    try:
        import uvloop

        runner: Callable[..., Any] = uvloop.run
    except ImportError:  # pragma: no cover
        runner = asyncio.run

    async def measured() -> Run:
        cpu: list[tuple[float, float, dict[str, float]]] = []

        def reading() -> tuple[float, float, dict[str, float]]:
            return (
                cpu_seconds(server) if server else 0.0,
                also() if also else 0.0,
                {name: read() for name, read in (parts or {}).items()},
            )

        async def sample() -> None:
            await asyncio.sleep(warmup)
            cpu.append(reading())
            await asyncio.sleep(seconds)
            cpu.append(reading())

        sampler = asyncio.ensure_future(sample())
        run = await _drive(port, requests, connections, warmup, seconds, first)
        await sampler
        run.server_cpu_seconds = cpu[1][0] - cpu[0][0]
        run.other_cpu_seconds = cpu[1][1] - cpu[0][1]
        run.parts_cpu_seconds = {name: cpu[1][2][name] - cpu[0][2][name] for name in cpu[1][2]}
        return run

    result: Run = runner(measured())
    return result


def cpu_seconds(parent: int) -> float:
    """User + system CPU of a process and its descendants (`serve`'s forkserver and the
    server processes it forked), from /proc."""
    return process_cpu_seconds([parent, *descendants(parent)])


def process_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes so far, from /proc (0 for one that is gone)."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def own_cpu_seconds() -> float:
    """User + system CPU of this process (the load generator) so far."""
    times = os.times()
    return times.user + times.system


def postgres_cpu_seconds() -> float:
    """CPU of every PostgreSQL process of this machine so far (backends, WAL writer,
    checkpointer, autovacuum): the database's whole share of the machine."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in {"postgres", "postmaster"}:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return process_cpu_seconds(pids)


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in path.read_text().split()]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    """Children, their children, and so on."""
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def server_pids(parent: int) -> list[int]:
    """The serving processes: with several, the children of `serve`'s forkserver
    (cli/serving.py); with one, `serve` itself."""
    forkservers = [
        pid for pid in children(parent) if b"multiprocessing.forkserver" in _cmdline(pid)
    ]
    return [pid for forkserver in forkservers for pid in children(forkserver)] or [parent]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
