"""Local Meta and Google stand-ins (real HTTP servers on 127.0.0.1) for any test.

`fake_meta` / `fake_google` start a fresh server per test; `meta_client` and
`google_client` are our clients pointed at them. Other tests may import
`tests.destinations.fake_meta.FakeMeta` and use it as a context manager.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.destinations.google import GoogleClient
from partnerlink.destinations.google_oauth import GoogleCredentials, TokenCache
from partnerlink.destinations.meta import MetaClient
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations import fake_google, fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import Destinations, Syncing, platform_settings
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.conftest import fresh_sign_in_budgets  # noqa: F401
from tests.merchant.helpers import sign_in


@pytest.fixture
def fake_meta_server() -> Iterator[FakeMeta]:
    with FakeMeta() as fake:
        yield fake


@pytest.fixture
def fake_google_server() -> Iterator[FakeGoogle]:
    with FakeGoogle() as fake:
        yield fake


@pytest.fixture
def meta_client(fake_meta_server: FakeMeta) -> Iterator[MetaClient]:
    with MetaClient(
        graph_url=fake_meta_server.graph_url,
        api_version=fake_meta.VERSION,
        access_token=fake_meta.ACCESS_TOKEN,
    ) as client:
        yield client


@pytest.fixture
def google_credentials() -> GoogleCredentials:
    return GoogleCredentials(
        client_id=fake_google.CLIENT_ID,
        client_secret=fake_google.CLIENT_SECRET,
        refresh_token=fake_google.REFRESH_TOKEN,
    )


@pytest.fixture
def google_client(
    fake_google_server: FakeGoogle, google_credentials: GoogleCredentials
) -> Iterator[GoogleClient]:
    with GoogleClient(
        datamanager_url=fake_google_server.datamanager_url,
        token_url=fake_google_server.token_url,
        credentials=google_credentials,
        tokens=TokenCache(),  # no token shared with another test
    ) as client:
        yield client


@pytest.fixture
def servers() -> Iterator[tuple[FakeMeta, FakeGoogle]]:
    """Both platforms' stand-ins, for the syncs' tests."""
    with FakeMeta() as meta, FakeGoogle() as google:
        yield meta, google


@pytest.fixture
def worker_settings(settings: Settings, servers: tuple[FakeMeta, FakeGoogle]) -> Settings:
    return platform_settings(settings, *servers)


@pytest.fixture
def api(client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]) -> Destinations:
    return Destinations(client, shop.profile.id, owner)


@pytest.fixture
def shop(session: Session) -> ConnectedStoreFixture:
    return create_connected_store(session)


@pytest.fixture
def owner(client: TestClient, shop: ConnectedStoreFixture) -> dict[str, str]:
    """The bearer header of the shop's merchant."""
    return sign_in(client)


@pytest.fixture
def syncing(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> Syncing:
    add_customer(session, shop.store, email="someone@example.com")
    return Syncing(app, api, *servers, worker_settings)
