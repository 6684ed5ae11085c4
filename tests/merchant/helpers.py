"""Helpers shared by the merchant API tests."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import DEFAULT_PASSWORD

TEST_CLIENT_ADDRESS = "testclient"  # what Starlette's TestClient reports as the peer
OWNER = "owner@example.com"
OTHER = "other@example.com"
USED_EMAILS = [OWNER, OTHER, "nobody@example.com", *(f"user{i}@example.com" for i in range(40))]


def sign_in(
    client: TestClient, email: str = OWNER, password: str = DEFAULT_PASSWORD
) -> dict[str, str]:
    """Signs in through the API and answers the bearer header."""
    response = client.post("/merchant/api/sessions", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['sessionToken']}"}
