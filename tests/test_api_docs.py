"""The API references: every status and `code` documented, examples that hold together, the
merchant API in its own document, and Swagger UI served without a CDN."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from partnerlink.webhooks.events import EVENT_TYPES
from tests.connect.oauth_steps import approve, build_oauth_world, challenge_of, reset_budgets
from tests.factories import create_connected_store, create_partner
from tests.merchant.conftest import fresh_sign_in_budgets  # noqa: F401
from tests.merchant.helpers import sign_in

PROBLEM = "application/problem+json"
OAUTH = "/v1/oauth/"
TOKEN_SHAPE = re.compile(r"plk_(at|rt|it|cs|ci|ms)_[A-Za-z0-9_-]{43}")
MERCHANT_PATHS = {
    ("post", "/merchant/api/sessions"),
    ("get", "/merchant/api/profiles"),
    ("post", "/merchant/api/profiles"),
    ("post", "/merchant/api/profiles/{profileId}/stores"),
    ("patch", "/merchant/api/stores/{storeId}"),
    ("post", "/merchant/api/stores/{storeId}/pairing-codes"),
    ("get", "/merchant/api/stores/{storeId}/connections"),
    ("delete", "/merchant/api/connections/{connectionId}"),
    ("get", "/merchant/api/profiles/{profileId}/customers"),
    ("get", "/merchant/api/consents/{integrationToken}"),
    ("post", "/merchant/api/consents/{integrationToken}/approve"),
    ("post", "/merchant/api/consents/{integrationToken}/decline"),
}


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def problem_examples(response: dict[str, Any]) -> dict[str, Any]:
    content = response["content"][PROBLEM]
    assert content["schema"] == {"$ref": "#/components/schemas/Problem"}
    examples: dict[str, Any] = content["examples"]
    return examples


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.fixture
def partner_schema(client: TestClient) -> dict[str, Any]:
    return client.get("/openapi.json").json()


@pytest.fixture
def merchant_schema(client: TestClient) -> dict[str, Any]:
    response = client.get("/merchant/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_partner_operation_lists_its_problems(partner_schema: dict[str, Any]) -> None:
    seen = 0
    for method, path, operation in operations(partner_schema):
        seen += 1
        responses = operation["responses"]
        expected = {"400", "500"}
        if path.startswith(OAUTH):  # RFC 6749's errors, checked by the OAuth test below
            responses = {k: v for k, v in responses.items() if k not in ("400", "401")}
        elif path != "/v1/auth/integration/pair":  # the one call that takes no credential
            expected.add("403")
        if "requestBody" in operation:
            expected.add("413")
        assert expected <= set(operation["responses"]), (method, path)
        assert "422" not in responses
        for status, response in responses.items():
            if not status.startswith(("4", "5")):
                continue
            examples = problem_examples(response)
            assert examples, (method, path, status)
            for code, example in examples.items():
                body = example["value"]
                assert body["status"] == int(status) and body["code"] == code
                assert body["success"] is False and body["type"] == "about:blank"
                assert f"`{code}`" in response["description"]
        if "requestBody" in operation:
            assert "payload_too_large" in problem_examples(responses["413"])
        assert "internal_error" in problem_examples(responses["500"])
    assert seen >= 12
    problem = partner_schema["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "code", "success"}


def test_data_endpoints_document_the_token_refusal(partner_schema: dict[str, Any]) -> None:
    for _method, path, operation in operations(partner_schema):
        if operation.get("security"):
            assert "invalid_token" in problem_examples(operation["responses"]["403"]), path
    credentials = partner_schema["paths"]["/v1/auth/integration"]["post"]["responses"]
    assert set(problem_examples(credentials["400"])) == {"missing_field"}
    assert set(problem_examples(credentials["403"])) == {"invalid_credentials"}
    store = partner_schema["paths"]["/v1/stores"]["put"]["responses"]
    assert {"missing_field", "invalid_field"} <= set(problem_examples(store["400"]))


def test_description_documents_what_no_single_route_answers(
    partner_schema: dict[str, Any], client: TestClient
) -> None:
    description = partner_schema["info"]["description"]
    for code in (
        "missing_version_prefix",
        "not_found",
        "method_not_allowed",
        "payload_too_large",
        "invalid_token",
        "internal_error",
        "unavailable",
    ):
        assert f"`{code}`" in description, code
    # ... and the server answers them as described.
    assert client.get("/stores").json()["code"] == "missing_version_prefix"
    assert client.get("/v1/nowhere").json()["code"] == "not_found"
    assert client.delete("/v1/stores").json()["code"] == "method_not_allowed"


def test_examples_hold_together(partner_schema: dict[str, Any]) -> None:
    tokens = [s for s in strings(partner_schema) if s.startswith("plk_")]
    assert len(tokens) >= 5
    for token in tokens:
        assert TOKEN_SHAPE.fullmatch(token), token

    order_body = partner_schema["components"]["schemas"]["OrderIn"]["examples"][0]
    details = order_body["orderDetails"]
    items = sum(int(i["itemPrice"]) * i["itemQuantity"] for i in details["orderItems"])
    payments = sum(int(p["paymentSum"]) for p in details["orderPayments"])
    assert items == payments == int(order_body["orderPrice"])

    exchanged = partner_schema["components"]["schemas"]["ExchangedTokens"]["examples"][0]
    refreshed = partner_schema["components"]["schemas"]["RefreshedToken"]["examples"][0]
    assert refreshed["expiration"] > exchanged["expiration"]  # a refresh starts a new year
    assert refreshed["accessToken"] != exchanged["accessToken"]


def test_merchant_api_has_its_own_reference(
    partner_schema: dict[str, Any], merchant_schema: dict[str, Any], client: TestClient
) -> None:
    documented = {
        (method, re.sub(r"\{store_id\}", "{storeId}", path))
        for method, path, _ in operations(merchant_schema)
    }
    assert documented >= MERCHANT_PATHS
    assert all(path.startswith("/merchant/api/") for path in merchant_schema["paths"])
    assert all(path.startswith("/v1/") for path in partner_schema["paths"])
    for method, path, operation in operations(merchant_schema):
        assert {"400", "500"} <= set(operation["responses"]), (method, path)
        if not path.endswith("/sessions"):
            assert "not_signed_in" in problem_examples(operation["responses"]["401"])
    sign_in = merchant_schema["paths"]["/merchant/api/sessions"]["post"]["responses"]
    assert "invalid_credentials" in problem_examples(sign_in["401"])
    assert "Problem" in merchant_schema["components"]["schemas"]
    # Each document carries only its own models.
    assert "OrderIn" not in merchant_schema["components"]["schemas"]
    assert "SessionIn" not in partner_schema["components"]["schemas"]
    page = client.get("/merchant/api/docs")
    assert page.status_code == 200 and "/merchant/api/openapi.json" in page.text


DOCS = Path(__file__).resolve().parents[1] / "docs"


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref", "")
    return dict(schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]) if ref else node


def _branches(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A union's branches, resolved, by title (`null` left out)."""
    found = [_resolved(schema, branch) for branch in node["anyOf"]]
    return {branch["title"]: branch for branch in found if branch.get("type") != "null"}


def test_destination_bodies_are_typed_in_the_merchant_reference(
    merchant_schema: dict[str, Any], client: TestClient, session: Session
) -> None:
    path = merchant_schema["paths"]["/merchant/api/profiles/{profileId}/destinations"]
    body = path["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["title"] == "DestinationRequest" and body["type"] == "object"
    # `credentials`, or instead `connection` (CONTRACT §14): neither alone is required.
    assert set(body["required"]) == {"platform", "kind", "target"}
    properties = body["properties"]
    assert {"credentials", "connection"} <= set(properties)
    assert properties["platform"]["enum"] == ["meta", "google"]
    assert properties["kind"]["enum"] == ["audience", "conversions"]
    credentials = _branches(merchant_schema, properties["credentials"])
    assert credentials["MetaCredentials"]["required"] == ["accessToken"]
    assert set(credentials["GoogleCredentials"]["required"]) == {
        "clientId",
        "clientSecret",
        "refreshToken",
    }
    targets = _branches(merchant_schema, properties["target"])
    assert set(targets) == {
        "MetaAudienceTarget",
        "MetaSalesTarget",
        "GoogleAudienceTarget",
        "GoogleSalesTarget",
    }
    google = targets["GoogleSalesTarget"]
    assert set(google["required"]) == {"customerId", "conversionActionId"}
    customer = re.compile(google["properties"]["customerId"]["pattern"])
    assert customer.search("123-456-7890") and customer.search("1234567890")
    assert not customer.search("123456789") and not customer.search("12345678901")
    consent = _branches(merchant_schema, properties["consent"])["GoogleConsent"]
    assert consent["properties"]["adUserData"]["enum"] == ["granted", "denied"]
    change = _path_item_body(merchant_schema, "patch")
    assert change["title"] == "DestinationChange" and "credentials" in change["properties"]

    # The examples of the document and of docs/ad-platforms.md are accepted as they stand.
    shop = create_connected_store(session)
    base = f"/merchant/api/profiles/{shop.profile.id}/destinations"
    headers = sign_in(client)
    worked = _worked_example()
    for example in [*body["examples"], worked]:
        created = client.post(base, json=example, headers=headers)
        assert created.status_code == 201, created.text
    assert created.json()["destination"]["target"] == {
        "customerId": "1234567890",
        "conversionActionId": "777000222",
    }
    refused = client.post(
        base,
        json={**worked, "target": {"customerId": "123-456-789"}},
        headers=headers,
    )
    assert refused.status_code == 400
    assert [e["field"] for e in refused.json()["errors"]] == [
        "target.customerId",
        "target.conversionActionId",
    ]
    assert refused.json()["detail"] in (DOCS / "ad-platforms.md").read_text(encoding="utf-8")


def _path_item_body(schema: dict[str, Any], method: str) -> dict[str, Any]:
    item = schema["paths"]["/merchant/api/profiles/{profileId}/destinations/{destinationId}"]
    body: dict[str, Any] = item[method]["requestBody"]["content"]["application/json"]["schema"]
    return body


def _worked_example() -> dict[str, Any]:
    """docs/ad-platforms.md's worked example: the first JSON block after its heading."""
    text = (DOCS / "ad-platforms.md").read_text(encoding="utf-8")
    after = text[text.index("### Worked example") :]
    found = re.search(r"```json\n(.*?)```", after, re.DOTALL)
    assert found is not None
    example: dict[str, Any] = json.loads(found.group(1))
    return example


@pytest.mark.parametrize("page", ["/docs", "/merchant/api/docs"])
def test_docs_pages_load_nothing_from_elsewhere(client: TestClient, page: str) -> None:
    html = client.get(page)
    assert html.status_code == 200

    urls = re.findall(r'(?:src|href)="([^"]+)"', html.text) + re.findall(
        r"url: '([^']+)'", html.text
    )
    assert urls
    assert not [u for u in urls if not u.startswith("/")], urls
    assert "cdn" not in html.text.lower()
    kinds = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        kinds[url.rsplit(".", 1)[-1]] = response.headers["content-type"]
        if url.endswith(".js"):
            assert "SwaggerUIBundle" in response.text
        if url.endswith(".json"):
            assert json.loads(response.text)["openapi"].startswith("3.")
    assert kinds["js"].startswith("text/javascript")
    assert kinds["css"].startswith("text/css")


def test_both_documents_pass_openapi_spec_validator(
    partner_schema: dict[str, Any], merchant_schema: dict[str, Any]
) -> None:
    assert partner_schema["openapi"].startswith("3.1.")
    validate(partner_schema)  # raises on any departure from OpenAPI 3.1's own schema
    validate(merchant_schema)


def test_oauth_is_where_openapi_tools_look(
    partner_schema: dict[str, Any], client: TestClient
) -> None:
    scheme = partner_schema["components"]["securitySchemes"]["OAuth2"]
    assert scheme["type"] == "oauth2"
    flow = scheme["flows"]["authorizationCode"]
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert flow["authorizationUrl"] == metadata["authorization_endpoint"]
    assert flow["authorizationUrl"] == "http://testserver/connect/oauth/authorize"
    assert flow["tokenUrl"] == flow["refreshUrl"] == "/v1/oauth/token"
    assert urljoin(metadata["issuer"], flow["tokenUrl"]) == metadata["token_endpoint"]
    assert list(flow["scopes"]) == metadata["scopes_supported"] == ["store"]
    fields = {
        "/v1/oauth/token": {"grant_type", "code", "redirect_uri", "code_verifier", "refresh_token"},
        "/v1/oauth/introspect": {"token", "token_type_hint"},
        "/v1/oauth/revoke": {"token", "token_type_hint"},
    }
    for path, expected in fields.items():
        operation = partner_schema["paths"][path]["post"]
        form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
        assert set(form["properties"]) == expected | {"client_id", "client_secret"}, path
        for status in ("400", "401"):
            error = operation["responses"][status]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/OAuthError"}, (path, status)
    answers = partner_schema["components"]["schemas"]
    assert {"access_token", "token_type", "expires_in", "refresh_token", "storeId"} <= set(
        answers["OAuthToken"]["required"]
    )
    assert set(answers["OAuthError"]["required"]) == {"error", "code"}
    # The data endpoints take its tokens as they take the consent flow's.
    for _method, path, operation in operations(partner_schema):
        if operation.get("security"):
            assert {"OAuth2": ["store"]} in operation["security"], path


def _names_partner(path: str, operation: dict[str, Any]) -> bool:
    names = {parameter["name"] for parameter in operation.get("parameters", [])}
    return path.startswith(OAUTH) or bool(operation.get("security")) or "client_id" in names


def test_rate_limits_and_replays_are_in_the_document(
    partner_schema: dict[str, Any], client: TestClient, session: Session
) -> None:
    headers = partner_schema["components"]["headers"]
    assert {"RateLimit", "RateLimit-Policy", "Retry-After", "Idempotent-Replayed"} <= set(headers)
    named = 0
    for method, path, operation in operations(partner_schema):
        responses = operation["responses"]
        for status, response in responses.items():
            if status == "429":
                assert "Retry-After" in response["headers"], (method, path)
        if _names_partner(path, operation):
            named += 1
            assert "rate_limited" in problem_examples(responses["429"]), (method, path)
            for response in responses.values():
                assert {"RateLimit", "RateLimit-Policy"} <= set(response["headers"]), path
    assert named >= 15
    batch = partner_schema["paths"]["/v1/orders/batch"]["post"]["responses"]["200"]
    assert batch["headers"]["Idempotent-Replayed"] == {
        "$ref": "#/components/headers/Idempotent-Replayed"
    }
    # ... as the server answers: a request naming a partner carries both fields.
    partner = create_partner(session)
    answer = client.get(
        "/v1/connections",
        params={"client_id": partner.client_id, "client_secret": partner.client_secret},
    )
    assert answer.status_code == 200
    assert answer.headers["ratelimit-policy"].startswith('"default";q=')
    assert answer.headers["ratelimit"].startswith('"default";r=')


def test_webhook_events_are_in_the_webhooks_section(partner_schema: dict[str, Any]) -> None:
    webhooks = partner_schema["webhooks"]
    assert set(webhooks) == set(EVENT_TYPES)
    schemas = partner_schema["components"]["schemas"]
    for event_type, item in webhooks.items():
        operation = item["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        event = schemas[body["$ref"].rsplit("/", 1)[1]]
        assert event["properties"]["type"]["const"] == event_type
        assert {"id", "type", "createdAt", "data"} <= set(event["required"])
        signed_by = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert signed_by == {
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature",
            "PartnerLink-Signature",
        }


def test_docs_sign_in_with_pkce_through_a_redirect_page_served_here(client: TestClient) -> None:
    html = client.get("/docs").text
    assert "oauth2RedirectUrl: window.location.origin + '/docs/oauth2-redirect'" in html
    assert '"usePkceWithAuthorizationCodeGrant": true' in html
    page = client.get("/docs/oauth2-redirect")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "window.opener.swaggerUIRedirectOauth2" in page.text
    # Inline: it loads nothing, from here or elsewhere.
    assert not re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert "cdn" not in page.text.lower() and "http" not in page.text.lower()
    # The merchant reference has no OAuth to sign in with.
    assert "oauth2RedirectUrl" not in client.get("/merchant/api/docs").text


def test_swagger_ui_gets_a_token_as_it_does_in_a_browser(
    client: TestClient, session: Session, settings: Settings
) -> None:
    """Its Authorize dialog: a popup to the authorization URL with PKCE and `state`, back to
    the redirect page with the code, then the token request with the form parameters."""
    reset_budgets(settings)
    redirect = "http://testserver/docs/oauth2-redirect"
    world = build_oauth_world(session, redirect_uri=redirect)
    verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(12)
    query = {
        "response_type": "code",
        "client_id": world.partner.client_id,
        "redirect_uri": redirect,
        "scope": "store",
        "state": state,
        "code_challenge": challenge_of(verifier),
        "code_challenge_method": "S256",
    }
    client.follow_redirects = False
    back = approve(
        client, f"/connect/oauth/authorize?{urlencode(query)}", f"store:{world.store.id}"
    )
    location = back.headers["location"]
    assert location.startswith(f"{redirect}?"), location
    params = {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}
    assert params["state"] == state
    assert client.get(location).status_code == 200  # the popup's page, which hands the code back
    token = client.post(
        "/v1/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "client_id": world.partner.client_id,
            "client_secret": world.partner.client_secret,
            "redirect_uri": redirect,
            "code_verifier": verifier,
        },
        headers={"X-Requested-With": "XMLHttpRequest"},
    )
    assert token.status_code == 200, token.text
    assert token.json()["token_type"] == "Bearer"
    bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
    assert client.get("/v1/stores", headers=bearer).status_code == 200
    reset_budgets(settings)
