"""A long-running process's start-up tuning (the server's; the benchmarks' ceiling too)."""

from __future__ import annotations

import gc


def tune_garbage_collector() -> None:
    """What start-up built (routes, schemas, statement caches) lives as long as the process.

    Freezing it keeps the cyclic collector from walking it again and again, and
    collecting the young generation less often spares the hot path (figures:
    bench/README.md, "Settings and their figures").
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
