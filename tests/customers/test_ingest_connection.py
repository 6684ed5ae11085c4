"""An upload's batches share one database connection on PostgreSQL (customers/ingestion/ingest.py's
_batch_sessions): when that connection is lost mid-upload, the upload is taken up again
and ends with every customer stored once."""

from __future__ import annotations

import json
import threading
import time

import pytest
from sqlalchemy import create_engine, text

from partnerlink.customers.ingestion import ingest
from tests.conftest import ON_POSTGRES
from tests.customers.conftest import Uploader, drain_worker, put_file, upload_status, upload_url

pytestmark = pytest.mark.skipif(not ON_POSTGRES, reason="one held connection is PostgreSQL's")

RECORDS = 3000


def test_a_connection_lost_mid_upload_is_replaced_and_nothing_is_stored_twice(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "BATCH_SIZE", 100)  # thirty batches, one connection
    records = [
        {"email": f"p{n}@example.com", "phoneNumber": f"+1415555{n:04d}"} for n in range(RECORDS)
    ]
    body = json.dumps(records).encode()
    answer = put_file(uploader.client, upload_url(uploader.client, uploader.connected), body)
    assert answer.status_code == 200, answer.text
    upload_id = answer.json()["uploadId"]

    killed: list[int] = []
    watcher = create_engine(uploader.app.state.engine.url)

    def kill_the_ingesting_connection() -> None:
        """Once a few batches have committed, ends the backend writing the next ones."""
        deadline = time.monotonic() + 30
        with watcher.connect() as conn:
            while time.monotonic() < deadline and not killed:
                done = conn.execute(
                    text("SELECT records_committed FROM uploads WHERE id = :id"), {"id": upload_id}
                ).scalar()
                conn.commit()
                if done and done >= 300:
                    killed.extend(
                        conn.execute(
                            text(
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                                " AND state <> 'idle' AND query ~ '(customers|uploads)'"
                            )
                        ).scalars()
                    )
                    conn.commit()
                time.sleep(0.001)

    thread = threading.Thread(target=kill_the_ingesting_connection)
    thread.start()
    try:
        drain_worker(uploader.app, uploader.settings)  # fails at the lost connection
        thread.join()
        assert killed, "the ingesting connection was never seen"
        cut_short = upload_status(uploader.client, uploader.connected, upload_id)
        assert cut_short["status"] != "done", cut_short
        drain_worker(uploader.app, uploader.settings)  # taken up again after the last batch
    finally:
        thread.join()
        watcher.dispose()

    status = upload_status(uploader.client, uploader.connected, upload_id)
    assert status["status"] == "done", status
    assert len(uploader.customers()) == RECORDS
    assert status["records"] == RECORDS
