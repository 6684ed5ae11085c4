"""POST /v1/orders never answers a status SPEC.md does not list (CONTRACT.md §6): when the
service cannot take an order now, it answers 500 `unavailable` with Retry-After."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool

from partnerlink.orders.intake.pipeline import Pipeline
from partnerlink.orders.service import accept_orders
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import count_orders, order_body


@pytest.fixture
def exhausted(tmp_path: Path) -> Iterator[Engine]:
    """An engine whose only connection someone else holds: no order can be stored now."""
    engine = create_engine(
        f"sqlite:///{tmp_path / 'busy.db'}",
        poolclass=QueuePool,
        pool_size=1,
        max_overflow=0,
        pool_timeout=0.05,
    )
    held = engine.raw_connection()
    try:
        yield engine
    finally:
        held.close()
        engine.dispose()


@pytest.mark.parametrize("lane", ["fast lane", "route"])
def test_an_order_the_service_cannot_take_answers_500_unavailable_with_retry_after(
    app: FastAPI,
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    exhausted: Engine,
    lane: str,
) -> None:
    handler = partial(accept_orders, settings=app.state.settings)
    app.state.orders_pipeline = Pipeline(exhausted, slots=1, handler=handler)
    # The legacy ?access_token= goes to the FastAPI route, a bearer header to the fast lane.
    auth = (
        {"headers": shop.auth}
        if lane == "fast lane"
        else {"params": {"access_token": shop.access_token}}
    )
    headers = {"content-type": "application/json", **auth.get("headers", {})}
    answer = client.post(
        "/v1/orders",
        content=json.dumps(order_body()),
        headers=headers,
        params=auth.get("params"),
    )
    assert answer.status_code == 500, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.headers["retry-after"] == "1"
    body = answer.json()
    assert (body["status"], body["code"], body["success"]) == (500, "unavailable", False)
    assert count_orders(session) == 0


def test_openapi_documents_the_500_of_post_orders(client: TestClient) -> None:
    responses = client.get("/openapi.json").json()["paths"]["/v1/orders"]["post"]["responses"]
    assert "503" not in responses
    examples = responses["500"]["content"]["application/problem+json"]["examples"]
    assert "unavailable" in {example["value"]["code"] for example in examples.values()}
