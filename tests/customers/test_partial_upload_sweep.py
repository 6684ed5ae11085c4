"""Temporary `.part` files of a PUT killed mid-stream are swept; nothing else is touched."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import partnerlink.worker as worker_module
from partnerlink.customers.storage import LocalUploadStorage
from partnerlink.settings import Settings
from partnerlink.worker import BackgroundWorker, partial_upload_age_seconds
from tests.customers.conftest import put_file, upload_url
from tests.factories import ConnectedStoreFixture

HOUR = 3600.0


def _file(root: Path, name: str, *, age_seconds: float = 0.0) -> Path:
    path = root / "store-1" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'[{"email": "a@example.com"}')
    stamp = time.time() - age_seconds
    os.utime(path, (stamp, stamp))
    return path


def _all_files(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()}


def test_old_part_file_is_removed(tmp_path: Path) -> None:
    old = _file(tmp_path, "u1.json.0123456789abcdef.part", age_seconds=2 * HOUR)
    assert LocalUploadStorage(tmp_path).sweep_partial(HOUR) == 1
    assert not old.exists()


def test_fresh_part_file_is_kept(tmp_path: Path) -> None:
    fresh = _file(tmp_path, "u1.json.0123456789abcdef.part", age_seconds=60)
    assert LocalUploadStorage(tmp_path).sweep_partial(HOUR) == 0
    assert fresh.exists()


def test_old_files_that_are_not_part_files_are_kept(tmp_path: Path) -> None:
    kept = {
        _file(tmp_path, "u1.json", age_seconds=10 * HOUR),
        _file(tmp_path, "u2.part.json", age_seconds=10 * HOUR),
        _file(tmp_path, "u3.partial", age_seconds=10 * HOUR),
    }
    (tmp_path / "store-1" / "dir.part").mkdir()
    assert LocalUploadStorage(tmp_path).sweep_partial(HOUR) == 0
    assert _all_files(tmp_path) == kept
    assert (tmp_path / "store-1" / "dir.part").is_dir()


def test_missing_upload_directory_sweeps_nothing(tmp_path: Path) -> None:
    assert LocalUploadStorage(tmp_path / "never-created").sweep_partial(HOUR) == 0


def test_part_file_vanishing_during_the_sweep_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = _file(tmp_path, "u1.json.aaaaaaaaaaaaaaaa.part", age_seconds=2 * HOUR)
    old = _file(tmp_path, "u2.json.bbbbbbbbbbbbbbbb.part", age_seconds=2 * HOUR)
    real_lstat = Path.lstat

    def lstat_then_lose_one(path: Path) -> os.stat_result:
        info = real_lstat(path)
        if path == gone:
            os.unlink(path)  # finished or swept by another process in between
        return info

    monkeypatch.setattr(Path, "lstat", lstat_then_lose_one)
    assert LocalUploadStorage(tmp_path).sweep_partial(HOUR) == 1
    assert not gone.exists() and not old.exists()


def test_finished_upload_survives_the_sweep_however_old(
    client: TestClient, connected: ConnectedStoreFixture, settings: Settings
) -> None:
    response = put_file(client, upload_url(client, connected), b'[{"email": "a@example.com"}]')
    assert response.status_code == 200, response.text
    root = settings.effective_upload_dir
    [stored] = _all_files(root)
    assert stored.suffix == ".json"
    stamp = time.time() - 30 * 24 * HOUR
    os.utime(stored, (stamp, stamp))
    assert LocalUploadStorage(root).sweep_partial(HOUR) == 0
    assert _all_files(root) == {stored}


def test_age_threshold_is_at_least_an_hour_and_at_least_the_url_lifetime(
    settings: Settings,
) -> None:
    assert partial_upload_age_seconds(settings) == HOUR  # default URL lifetime: 900 s
    settings.upload_url_ttl_seconds = 6 * 3600
    assert partial_upload_age_seconds(settings) == 6 * HOUR


def test_worker_sweeps_at_start(
    app: FastAPI, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    root = settings.effective_upload_dir
    old = _file(root, "u1.json.0123456789abcdef.part", age_seconds=2 * HOUR)
    fresh = _file(root, "u2.json.fedcba9876543210.part", age_seconds=60)
    worker = BackgroundWorker(app.state.sessionmaker, settings)
    with caplog.at_level(logging.INFO, logger="partnerlink.worker"):
        worker.start()
        try:
            deadline = time.monotonic() + 60
            while old.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            worker.stop()
    assert not old.exists() and fresh.exists()
    assert "removed 1 abandoned partial upload file(s)" in caplog.text


def test_worker_sweeps_again_only_after_the_interval(
    app: FastAPI, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(worker_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    root = settings.effective_upload_dir
    worker = BackgroundWorker(app.state.sessionmaker, settings)
    _file(root, "u1.json.0123456789abcdef.part", age_seconds=2 * HOUR)
    assert worker.sweep_if_due() == 1  # at start

    later = _file(root, "u2.json.fedcba9876543210.part", age_seconds=2 * HOUR)
    clock[0] += worker_module.PARTIAL_SWEEP_INTERVAL_SECONDS - 1
    assert worker.sweep_if_due() == 0 and later.exists()  # not yet due: no directory walk
    clock[0] += 1
    assert worker.sweep_if_due() == 1 and not later.exists()
