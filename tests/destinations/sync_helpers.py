"""Arranging syncs against the local Meta and Google servers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import opt_out_phone
from partnerlink.audiences.hashing import meta_hashes
from partnerlink.customers.models import Customer
from partnerlink.destinations.tasks import sync_due_destinations, wait_for_syncs
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer
from tests.destinations import fake_google, fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta


def platform_settings(settings: Settings, meta: FakeMeta, google: FakeGoogle) -> Settings:
    return settings.model_copy(
        update={
            "meta_graph_url": meta.graph_url,
            "meta_api_version": fake_meta.VERSION,
            "google_datamanager_url": google.datamanager_url,
            "google_token_url": google.token_url,
            "ad_request_timeout_seconds": 1.0,
        }
    )


def customer_row(customer: Customer) -> tuple[str, ...]:
    """The row Meta holds for the customer."""
    return meta_hashes(
        (
            customer.email,
            customer.phone_number,
            customer.first_name,
            customer.last_name,
            customer.city,
            customer.country_code,
        )
    )


def run_worker(app: FastAPI, settings: Settings) -> int:
    """One worker pass of the ad-platforms task, waited for; answers how many it synced."""
    started = sync_due_destinations(app.state.sessionmaker, settings)
    wait_for_syncs(timeout=60)
    return started


def meta_audience(
    segment: str = "all", audience_id: str = fake_meta.AUDIENCE_ID, **extra: Any
) -> dict[str, Any]:
    return {
        "platform": "meta",
        "kind": "audience",
        "segment": segment,
        "credentials": {"accessToken": fake_meta.ACCESS_TOKEN},
        "target": {"audienceId": audience_id},
        **extra,
    }


def meta_conversions() -> dict[str, Any]:
    return {
        "platform": "meta",
        "kind": "conversions",
        "credentials": {"accessToken": fake_meta.ACCESS_TOKEN},
        "target": {"datasetId": fake_meta.DATASET_ID},
    }


def google_credentials(refresh_token: str = fake_google.REFRESH_TOKEN) -> dict[str, str]:
    return {
        "clientId": fake_google.CLIENT_ID,
        "clientSecret": fake_google.CLIENT_SECRET,
        "refreshToken": refresh_token,
    }


def google_audience(segment: str = "all") -> dict[str, Any]:
    return {
        "platform": "google",
        "kind": "audience",
        "segment": segment,
        "credentials": google_credentials(),
        "target": {"customerId": fake_google.CUSTOMER_ID, "userListId": fake_google.USER_LIST_ID},
        "consent": {"adUserData": "granted", "adPersonalization": "granted"},
    }


def google_conversions() -> dict[str, Any]:
    return {
        "platform": "google",
        "kind": "conversions",
        "credentials": google_credentials(),
        "target": {
            "customerId": fake_google.CUSTOMER_ID,
            "conversionActionId": fake_google.CONVERSION_ACTION_ID,
        },
    }


class Destinations:
    """The merchant API of one profile's destinations, as the merchant calls it."""

    def __init__(self, client: TestClient, profile_id: str, headers: dict[str, str]) -> None:
        self.client = client
        self.base = f"/merchant/api/profiles/{profile_id}/destinations"
        self.headers = headers

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.post(self.base, json=body, headers=self.headers)
        assert response.status_code == 201, response.text
        return dict(response.json()["destination"])

    def get(self, destination_id: str) -> dict[str, Any]:
        response = self.client.get(f"{self.base}/{destination_id}", headers=self.headers)
        assert response.status_code == 200, response.text
        return dict(response.json()["destination"])

    def sync(self, destination_id: str) -> None:
        response = self.client.post(f"{self.base}/{destination_id}/sync", headers=self.headers)
        assert response.status_code == 202, response.text

    def patch(self, destination_id: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.patch(
            f"{self.base}/{destination_id}", json=body, headers=self.headers
        )
        assert response.status_code == 200, response.text
        return dict(response.json()["destination"])


def held_row(session: Session, customer_id: int) -> tuple[str, ...]:
    """The row Meta holds for the customer as the database has it now."""
    customer = session.get(Customer, customer_id)
    assert customer is not None
    session.refresh(customer)
    row = customer_row(customer)
    session.rollback()  # the SQLite test database has one connection: give it back
    return row


def run_sql(session: Session, statement: str, **params: object) -> None:
    """A change made behind the application's back (no updated_at moves)."""
    session.execute(text(statement), params)
    session.commit()


@dataclass(frozen=True)
class Cast:
    """The customers (ids) an incremental sync must follow, one for each way a member
    changes; `members` are the ones in the `all` segment at first."""

    fillers: list[int]
    mover: int  # changes phone number
    nameless: int  # no identifier, then gains an email
    opted: int  # opts out through the merchant API
    stopped: int  # answers STOP
    erased: int  # erased through the merchant API

    @property
    def members(self) -> set[int]:
        return {*self.fillers, self.mover, self.opted, self.stopped, self.erased}


def add_cast(session: Session, store: Store) -> Cast:
    cast = Cast(
        fillers=[add_customer(session, store, email=f"f{i}@example.com").id for i in range(20)],
        mover=add_customer(session, store, phone="+16505550001").id,
        nameless=add_customer(session, store, first_name="Nobody").id,
        opted=add_customer(session, store, email="opted@example.com").id,
        stopped=add_customer(session, store, phone="+16505550002").id,
        erased=add_customer(session, store, email="erased@example.com").id,
    )
    session.rollback()
    return cast


def change_the_cast(
    session: Session, client: TestClient, owner: dict[str, str], profile_id: str, cast: Cast
) -> None:
    """Every change of the cast, each the way a merchant or a customer makes it."""
    moved = "UPDATE customers SET phone_number = '+16505559999' WHERE id = :i"
    run_sql(session, moved, i=cast.mover)
    found = "UPDATE customers SET email = 'found@example.com' WHERE id = :i"
    run_sql(session, found, i=cast.nameless)
    choices = f"/merchant/api/profiles/{profile_id}/customers"
    answer = client.post(f"{choices}/opt-out", json={"email": "opted@example.com"}, headers=owner)
    assert answer.status_code == 200, answer.text
    opt_out_phone(session, "+16505550002")
    session.commit()
    answer = client.post(f"{choices}/erase", json={"email": "erased@example.com"}, headers=owner)
    assert answer.json() == {"erased": 1}


def lift_opt_out(client: TestClient, owner: dict[str, str], profile_id: str) -> None:
    answer = client.request(
        "DELETE",
        f"/merchant/api/profiles/{profile_id}/customers/opt-out",
        json={"email": "opted@example.com"},
        headers=owner,
    )
    assert answer.status_code == 200, answer.text


@dataclass(frozen=True)
class Syncing:
    """A shop with one customer (someone@example.com), its merchant API, both platforms'
    stand-ins and the worker's settings pointed at them (the `syncing` fixture)."""

    app: FastAPI
    api: Destinations
    meta: FakeMeta
    google: FakeGoogle
    settings: Settings

    def run(self) -> int:
        return run_worker(self.app, self.settings)
