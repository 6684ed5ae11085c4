"""Liveness, readiness and Prometheus metrics.

With several server processes (`partnerlink serve --workers N`), each process
writes its metrics to files in a directory made fresh for the run
(prometheus-client's multiprocess mode, PROMETHEUS_MULTIPROC_DIR), and /metrics
adds up those of every process, whichever process answers the scrape.
"""

from __future__ import annotations

import os
import tempfile

from fastapi import APIRouter, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    generate_latest,
    multiprocess,
    values,
)
from sqlalchemy import text

from partnerlink.problems import problem_response

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz(request: Request) -> Response:
    try:
        with request.app.state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception:
        return problem_response(503, "database_unreachable", "The database is not reachable.")
    return Response('{"status":"ready"}', media_type="application/json")


MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


@router.get("/metrics")
def metrics() -> Response:
    if not _multiprocess():
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def _multiprocess() -> bool:
    # Only if this process records to files too: prometheus-client picks its value class
    # when first imported, so a process that imported it before the variable was set
    # keeps its metrics in memory and must show those.
    return bool(os.environ.get(MULTIPROCESS_DIR_ENV)) and values.ValueClass is not values.MutexValue


def start_multiprocess_metrics() -> str:
    """Makes a fresh metrics directory for this run's server processes (set in the
    environment they inherit, before they start); returns it for removal at the end."""
    directory = tempfile.mkdtemp(prefix="partnerlink-metrics-")
    os.environ[MULTIPROCESS_DIR_ENV] = directory
    return directory


def mark_server_process_dead(pid: int | None) -> None:
    """Drops a gone process's live gauges (its counters keep counting in the total)."""
    if pid is not None and os.environ.get(MULTIPROCESS_DIR_ENV):
        multiprocess.mark_process_dead(pid)
