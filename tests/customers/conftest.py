"""Builders for the customers tests: a connected store, and a whole upload round trip."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.settings import Settings
from partnerlink.worker import run_once
from tests.factories import ConnectedStoreFixture, create_connected_store


@pytest.fixture
def connected(session: Session) -> ConnectedStoreFixture:
    return create_connected_store(session)


def upload_url(client: TestClient, connected: ConnectedStoreFixture) -> str:
    response = client.get("/v1/customers", headers=connected.auth)
    assert response.status_code == 200, response.text
    url: str = response.json()["uploadUrl"]
    return url


def put_file(client: TestClient, url: str, body: bytes) -> Any:
    return client.put(url, content=body, headers={"Content-Type": "application/json"})


def drain_worker(app: FastAPI, settings: Settings) -> None:
    """Runs the worker until it has nothing left to do."""
    for _ in range(1000):
        if run_once(app.state.sessionmaker, settings) == 0:
            return
    raise AssertionError("worker did not settle")


def upload_status(client: TestClient, connected: ConnectedStoreFixture, upload_id: str) -> Any:
    response = client.get(f"/v1/customers/uploads/{upload_id}", headers=connected.auth)
    assert response.status_code == 200, response.text
    return response.json()


def ingest(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    records: Any,
) -> dict[str, Any]:
    """Uploads `records` (or raw bytes) through a fresh URL, runs the worker, answers the status."""
    body = records if isinstance(records, bytes) else json.dumps(records).encode()
    response = put_file(client, upload_url(client, connected), body)
    assert response.status_code == 200, response.text
    drain_worker(app, settings)
    status: dict[str, Any] = upload_status(client, connected, response.json()["uploadId"])
    return status


@dataclass
class Uploader:
    """One connected store uploading through the real URL, with the worker run in-process."""

    client: TestClient
    app: FastAPI
    settings: Settings
    connected: ConnectedStoreFixture
    session: Session

    def ingest(
        self, records: Any, connected: ConnectedStoreFixture | None = None
    ) -> dict[str, Any]:
        return ingest(self.client, self.app, self.settings, connected or self.connected, records)

    def customers(self, profile_id: str | None = None) -> list[tuple[Any, ...]]:
        """(email, phone, first, last, city, country) of the profile's customers, oldest first."""
        rows = self.session.execute(
            select(
                Customer.email,
                Customer.phone_number,
                Customer.first_name,
                Customer.last_name,
                Customer.city,
                Customer.country_code,
            )
            .where(Customer.profile_id == (profile_id or self.connected.profile.id))
            .order_by(Customer.id)
        ).all()
        self.session.rollback()  # SQLite: do not keep the write lock
        return [tuple(row) for row in rows]


@pytest.fixture
def uploader(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> Uploader:
    return Uploader(client, app, settings, connected, session)


def counts(status: dict[str, Any]) -> tuple[int, ...]:
    """(records, created, updated, unchanged, rejected)."""
    return tuple(status[k] for k in ("records", "created", "updated", "unchanged", "rejected"))
