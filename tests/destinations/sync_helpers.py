"""Arranging syncs against the local Meta and Google servers."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from partnerlink.audiences.hashing import meta_hashes
from partnerlink.customers.models import Customer
from partnerlink.destinations.tasks import sync_due_destinations, wait_for_syncs
from partnerlink.settings import Settings
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
