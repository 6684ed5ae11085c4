"""The worker's loop: each task keeps its own pace (worker.BackgroundWorker.run_due)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI

from partnerlink.worker import BACKLOG_ITEMS, BackgroundWorker


class _Task:
    """Answers the given counts in turn (then 0), counting its runs."""

    def __init__(self, *counts: int) -> None:
        self.counts = list(counts)
        self.runs = 0

    def __call__(self, _sessions: Any, _settings: Any) -> int:
        self.runs += 1
        return self.counts.pop(0) if self.counts else 0


def _worker(app: FastAPI, **tasks: _Task) -> BackgroundWorker:
    worker = BackgroundWorker(app.state.sessionmaker, app.state.settings)
    worker.tasks = list(tasks.items())
    worker.next_run = dict.fromkeys(tasks, 0.0)
    return worker


def test_a_task_with_a_backlog_runs_again_at_once_while_idle_ones_wait(app: FastAPI) -> None:
    busy, idle = _Task(BACKLOG_ITEMS, BACKLOG_ITEMS, 3), _Task()
    worker = _worker(app, receipts=busy, webhooks=idle)

    assert worker.run_due() == 0.0  # the busy task is due again now
    assert (busy.runs, idle.runs) == (1, 1)
    worker.run_due()
    worker.run_due()  # its backlog is gone (3 < BACKLOG_ITEMS): it waits too
    assert (busy.runs, idle.runs) == (3, 1)
    wait = worker.run_due()
    assert (busy.runs, idle.runs) == (3, 1)  # nothing was due
    poll = app.state.settings.worker_poll_seconds
    assert poll / 2 < wait <= poll


def test_a_failing_task_waits_like_an_idle_one_and_stops_no_other(app: FastAPI) -> None:
    def failing(_sessions: Any, _settings: Any) -> int:
        raise RuntimeError("boom")

    other = _Task(BACKLOG_ITEMS)
    worker = BackgroundWorker(app.state.sessionmaker, app.state.settings)
    worker.tasks = [("broken", failing), ("other", other)]
    worker.next_run = {"broken": 0.0, "other": 0.0}
    worker.run_due()
    assert other.runs == 1 and worker.next_run["broken"] > time.monotonic()


def test_a_task_may_ask_to_be_looked_at_sooner_than_the_poll(app: FastAPI) -> None:
    """The journal, while orders gather: looked at again once they have."""
    gathering = _Task()
    worker = BackgroundWorker(app.state.sessionmaker, app.state.settings)
    worker.tasks = [("journal", lambda _s, _t: (gathering(_s, _t), 0.05))]
    worker.next_run = {"journal": 0.0}
    wait = worker.run_due()
    assert 0 < wait <= 0.05 < app.state.settings.worker_poll_seconds
