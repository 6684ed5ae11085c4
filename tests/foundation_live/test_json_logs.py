"""PARTNERLINK_LOG_FORMAT=json on a live server: JSON lines only, redacted like text (CONTRACT §10)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session

from tests.conftest import LiveServer
from tests.factories import create_connected_store


def _lines(server: LiveServer) -> list[dict[str, Any]]:
    text = server.logs()
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line: {line!r}")
    return parsed


@pytest.mark.slow
def test_every_line_is_json_with_request_fields_and_no_token(
    live_env: dict[str, str], session: Session
) -> None:
    connected = create_connected_store(session)
    server = LiveServer({**live_env, "PARTNERLINK_LOG_FORMAT": "json"})
    try:
        server.start()
        legacy = httpx.get(
            f"{server.url}/v1/customers",
            params={"access_token": connected.access_token},
            headers={"X-Request-ID": "lb-req-42"},
            timeout=30,
        )
        assert legacy.status_code == 200
        upload_url = legacy.json()["uploadUrl"]
        assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200
        httpx.put(upload_url, content=b"[]", timeout=30)
    finally:
        server.stop()

    entries = _lines(server)
    text = server.logs()
    assert connected.access_token not in text
    assert upload_url.rsplit("/", 1)[-1] not in text
    for entry in entries:
        assert {"timestamp", "level", "logger", "message"} <= entry.keys(), entry
    loggers = {entry["logger"] for entry in entries}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers  # uvicorn's own lines included

    (customers,) = [e for e in entries if e.get("route") == "/v1/customers"]
    assert customers["request_id"] == "lb-req-42"  # the load balancer's id is kept
    assert customers["method"] == "GET"
    assert customers["status"] == 200
    assert isinstance(customers["duration_ms"], float)
    assert customers["duration_ms"] >= 0
    assert customers["path"] == "/v1/customers?access_token=[REDACTED]"
    assert "access_token=[REDACTED]" in customers["message"]

    (ready,) = [e for e in entries if e.get("route") == "/readyz"]
    assert ready["status"] == 200
    assert len(ready["request_id"]) == 16  # made up when the caller sends none

    (upload,) = [e for e in entries if e.get("method") == "PUT"]
    assert upload["path"] == "/v1/uploads/[REDACTED]"
