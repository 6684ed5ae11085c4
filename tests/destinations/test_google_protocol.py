"""Our Google client against local servers speaking OAuth 2.0 and the Data Manager API."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from partnerlink.destinations.google import GoogleClient, GoogleTarget, google_purchase_event
from partnerlink.destinations.google_oauth import GoogleCredentials, TokenCache
from partnerlink.destinations.platform import PlatformError, platform_client
from tests.destinations import fake_google
from tests.destinations.fake_google import (
    CONVERSION_ACTION_ID,
    CUSTOMER_ID,
    LOGIN_CUSTOMER_ID,
    USER_LIST_ID,
    FakeGoogle,
)

AUDIENCE = GoogleTarget(customer_id=CUSTOMER_ID, product_destination_id=USER_LIST_ID)
SALES = GoogleTarget(customer_id=CUSTOMER_ID, product_destination_id=CONVERSION_ACTION_ID)


def _member(n: int) -> dict[str, Any]:
    return {"userIdentifiers": [{"emailAddress": f"{n:064x}"}]}


def _event(n: int) -> dict[str, Any]:
    return google_purchase_event(
        transaction_id=f"pl-{n}",
        created_at=datetime(2026, 11, 1, 13, 30, tzinfo=timezone(timedelta(hours=1))),
        value=19.99,
        currency="EUR",
        user_data=_member(n),
    )


def test_members_are_added_with_the_contracts_body(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    target = GoogleTarget(
        customer_id=CUSTOMER_ID,
        product_destination_id=USER_LIST_ID,
        login_customer_id=LOGIN_CUSTOMER_ID,
        consent={"adUserData": "granted", "adPersonalization": "denied"},
    )
    address = {
        "address": {
            "givenName": "a" * 64,
            "familyName": "b" * 64,
            "regionCode": "US",
            "postalCode": "94105",
        }
    }
    user_data = {
        "userIdentifiers": [{"emailAddress": "c" * 64}, {"phoneNumber": "d" * 64}, address]
    }

    report = google_client.add_members(target, [user_data])

    request = fake_google_server.requests_to(lambda r: r.path.startswith("/v1/"))[0]
    assert request.path == "/v1/audienceMembers:ingest"
    assert request.headers["authorization"].startswith("Bearer ya29.")
    assert request.json() == {
        "destinations": [
            {
                "operatingAccount": {"accountType": "GOOGLE_ADS", "accountId": CUSTOMER_ID},
                "loginAccount": {"accountType": "GOOGLE_ADS", "accountId": LOGIN_CUSTOMER_ID},
                "productDestinationId": USER_LIST_ID,
            }
        ],
        "audienceMembers": [{"userData": user_data}],
        "consent": {"adUserData": "CONSENT_GRANTED", "adPersonalization": "CONSENT_DENIED"},
        "encoding": "HEX",
    }
    assert fake_google_server.members() == [user_data]
    assert report.sent == 1 and report.as_report()["requestId"]


def test_no_consent_is_sent_without_the_merchants_statement(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.add_members(AUDIENCE, [_member(1)])
    body = fake_google_server.bodies[-1]
    assert "consent" not in body and "loginAccount" not in body["destinations"][0]


def test_members_go_10000_a_request_and_are_removed(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.add_members(AUDIENCE, [_member(n) for n in range(12_000)])
    google_client.remove_members(AUDIENCE, [_member(n) for n in range(11_000)])

    bodies = fake_google_server.bodies
    assert [len(b["audienceMembers"]) for b in bodies] == [10_000, 2_000, 10_000, 1_000]
    paths = [r.path for r in fake_google_server.requests_to(lambda r: r.path.startswith("/v1/"))]
    assert paths[2:] == ["/v1/audienceMembers:remove"] * 2
    assert len(fake_google_server.members()) == 1_000
    # One access token for all four calls.
    assert fake_google_server.token_requests == 1


def test_events_go_2000_a_request_in_the_contracts_shape(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    report = google_client.send_events(SALES, [_event(n) for n in range(4_500)])

    assert [len(b["events"]) for b in fake_google_server.bodies] == [2_000, 2_000, 500]
    assert report.sent == 4_500 and len(report.request_ids) == 3
    assert fake_google_server.events[CONVERSION_ACTION_ID][0] == {
        "transactionId": "pl-0",
        "eventTimestamp": "2026-11-01T12:30:00Z",
        "conversionValue": 19.99,
        "currency": "EUR",
        "eventSource": "IN_STORE",
        "userData": _member(0),
    }
    assert (
        fake_google_server.bodies[0]["destinations"][0]["productDestinationId"]
        == CONVERSION_ACTION_ID
    )


def test_the_token_request_is_the_refresh_token_grant(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.add_members(AUDIENCE, [_member(1)])
    token_request = fake_google_server.requests_to(lambda r: r.path == "/token")[0]
    assert token_request.headers["content-type"] == "application/x-www-form-urlencoded"
    form = dict(pair.split("=", 1) for pair in token_request.body.decode().split("&"))
    assert form["grant_type"] == "refresh_token"
    assert set(form) == {"grant_type", "client_id", "client_secret", "refresh_token"}


def test_a_token_is_fetched_again_once_it_expires(google_credentials: GoogleCredentials) -> None:
    # expires_in 60 s minus our 60 s margin: every call needs a new token.
    with (
        FakeGoogle(expires_in=60) as fake,
        GoogleClient(
            datamanager_url=fake.datamanager_url,
            token_url=fake.token_url,
            credentials=google_credentials,
            tokens=TokenCache(),
        ) as client,
    ):
        client.add_members(AUDIENCE, [_member(1)])
        client.add_members(AUDIENCE, [_member(2)])
        assert fake.token_requests == 2


def test_the_token_cache_is_shared_between_clients_of_the_same_credentials(
    fake_google_server: FakeGoogle, google_credentials: GoogleCredentials
) -> None:
    tokens = TokenCache()
    for _ in range(3):
        with GoogleClient(
            datamanager_url=fake_google_server.datamanager_url,
            token_url=fake_google_server.token_url,
            credentials=google_credentials,
            tokens=tokens,
        ) as client:
            client.add_members(AUDIENCE, [_member(1)])
    assert fake_google_server.token_requests == 1


def test_invalid_grant_needs_the_merchant_and_names_no_secret(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    fake_google_server.revoke_refresh_token()
    with pytest.raises(PlatformError) as caught:
        google_client.add_members(AUDIENCE, [_member(1)])
    assert caught.value.kind == "credentials" and "invalid_grant" in caught.value.message
    for secret in (fake_google.REFRESH_TOKEN, fake_google.CLIENT_SECRET):
        assert secret not in caught.value.message
    assert fake_google_server.bodies == []


def test_an_unknown_client_is_a_credentials_error(fake_google_server: FakeGoogle) -> None:
    credentials = GoogleCredentials("someone-else", "nope", fake_google.REFRESH_TOKEN)
    with (
        GoogleClient(
            datamanager_url=fake_google_server.datamanager_url,
            token_url=fake_google_server.token_url,
            credentials=credentials,
            tokens=TokenCache(),
        ) as client,
        pytest.raises(PlatformError) as caught,
    ):
        client.send_events(SALES, [_event(1)])
    assert caught.value.kind == "credentials"


def test_a_revoked_access_token_is_replaced_once(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.add_members(AUDIENCE, [_member(1)])
    fake_google_server.revoke_access_tokens()
    google_client.add_members(AUDIENCE, [_member(2)])
    assert fake_google_server.token_requests == 2
    assert len(fake_google_server.members()) == 2


def test_a_403_needs_the_merchant(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.access_token()
    fake_google_server.answer_next(
        403,
        {
            "error": {
                "code": 403,
                "message": "The caller does not have permission",
                "status": "PERMISSION_DENIED",
            }
        },
    )
    with pytest.raises(PlatformError) as caught:
        google_client.add_members(AUDIENCE, [_member(1)])
    assert caught.value.kind == "credentials" and "PERMISSION_DENIED" in caught.value.message


def test_a_429_is_retried_after_what_google_asks(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.access_token()
    fake_google_server.rate_limit_next(retry_after="11")
    with pytest.raises(PlatformError) as caught:
        google_client.add_members(AUDIENCE, [_member(1)])
    assert caught.value.kind == "retry" and caught.value.retry_after == 11.0


def test_server_errors_and_garbage_are_retried(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.access_token()
    fake_google_server.server_error_next(503)
    with pytest.raises(PlatformError) as first:
        google_client.send_events(SALES, [_event(1)])
    fake_google_server.garbage_next(status=200)
    with pytest.raises(PlatformError) as second:
        google_client.send_events(SALES, [_event(1)])
    assert first.value.kind == second.value.kind == "retry"


def test_a_token_endpoint_outage_is_retried(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    fake_google_server.server_error_next(500)
    with pytest.raises(PlatformError) as caught:
        google_client.add_members(AUDIENCE, [_member(1)])
    assert caught.value.kind == "retry"


def test_a_hanging_platform_times_out(
    fake_google_server: FakeGoogle, google_credentials: GoogleCredentials
) -> None:
    fake_google_server.hang_next(seconds=30)
    started = time.monotonic()
    with (
        platform_client(request_seconds=0.5) as http,
        GoogleClient(
            datamanager_url=fake_google_server.datamanager_url,
            token_url=fake_google_server.token_url,
            credentials=google_credentials,
            client=http,
            tokens=TokenCache(),
        ) as client,
        pytest.raises(PlatformError) as caught,
    ):
        client.add_members(AUDIENCE, [_member(1)])
    assert caught.value.kind == "retry"
    assert time.monotonic() - started < 5


def test_rows_google_names_are_rejected_and_the_others_sent(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    fake_google_server.refuse_identifier(f"{3:064x}", f"{8:064x}")

    report = google_client.add_members(AUDIENCE, [_member(n) for n in range(10)])

    assert report.rejected == 2 and report.sent == 8
    kept = {m["userIdentifiers"][0]["emailAddress"] for m in fake_google_server.members()}
    assert kept == {f"{n:064x}" for n in range(10) if n not in (3, 8)}


def test_a_wrong_user_list_is_invalid(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    google_client.access_token()
    fake_google_server.answer_next(
        400,
        {"error": {"code": 400, "message": "User list not found.", "status": "INVALID_ARGUMENT"}},
    )
    with pytest.raises(PlatformError) as caught:
        google_client.add_members(AUDIENCE, [_member(1)])
    assert caught.value.kind == "invalid"


def test_ids_that_are_not_digits_never_leave(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    with pytest.raises(PlatformError) as caught:
        google_client.add_members(GoogleTarget("12-34", USER_LIST_ID), [_member(1)])
    assert caught.value.kind == "invalid"
    assert fake_google_server.bodies == []


def test_event_timestamps_are_rfc3339_utc() -> None:
    event = google_purchase_event(
        transaction_id="t",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        value=1,
        currency="USD",
        user_data={},
    )
    assert event["eventTimestamp"] == "2026-01-02T03:04:05Z"


# -- every body as the official types parse it (CONTRACT §11) -------------------------

CONSENTED = GoogleTarget(
    customer_id=CUSTOMER_ID,
    product_destination_id=USER_LIST_ID,
    consent={"adUserData": "granted", "adPersonalization": "granted"},
)


def test_consent_travels_on_ingest_calls_only(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    """RemoveAudienceMembersRequest has no `consent` field: a consented merchant's
    removals go without it, and the strict stand-in takes them."""
    google_client.add_members(CONSENTED, [_member(1), _member(2)])
    report = google_client.remove_members(CONSENTED, [_member(1)])
    consented_sales = GoogleTarget(CUSTOMER_ID, CONVERSION_ACTION_ID, consent=CONSENTED.consent)
    google_client.send_events(consented_sales, [_event(1)])

    ingest, remove, events = fake_google_server.bodies
    assert (
        ingest["consent"]
        == events["consent"]
        == {
            "adUserData": "CONSENT_GRANTED",
            "adPersonalization": "CONSENT_GRANTED",
        }
    )
    assert "consent" not in remove
    assert report.sent == 1 and fake_google_server.members() == [_member(2)]
    assert fake_google_server.refusals == []


def test_the_stand_in_refuses_what_the_official_types_refuse(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    """As Google's front end: an unknown field or a wrong enum name is 400
    INVALID_ARGUMENT with the parser's words, and nothing is taken."""
    token = google_client.access_token()
    destinations = AUDIENCE.destinations()
    members = [{"userData": _member(1)}]
    refused = {
        "/v1/audienceMembers:remove": {
            "destinations": destinations,
            "audienceMembers": members,
            "consent": {"adUserData": "CONSENT_GRANTED"},
            "encoding": "HEX",
        },
        "/v1/audienceMembers:ingest": {
            "destinations": destinations,
            "audienceMembers": members,
            "encoding": "HEXADECIMAL",
        },
        "/v1/events:ingest": {
            "destinations": destinations,
            "events": [{**_event(1), "eventSource": "SHOP"}],
            "encoding": "HEX",
        },
    }
    with httpx.Client(base_url=fake_google_server.datamanager_url) as http:
        answers = [
            http.post(path, json=body, headers={"Authorization": f"Bearer {token}"})
            for path, body in refused.items()
        ]
        unknown_parameter = http.get(
            "/v1/requestStatus:retrieve",
            params={"requestId": "x", "destination": "1"},
            headers={"Authorization": f"Bearer {token}"},
        )
    for answer in [*answers, unknown_parameter]:
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert 'has no field named "consent"' in answers[0].json()["error"]["message"]
    assert "Invalid enum value HEXADECIMAL" in answers[1].json()["error"]["message"]
    assert "Invalid enum value SHOP" in answers[2].json()["error"]["message"]
    assert 'has no field named "destination"' in unknown_parameter.json()["error"]["message"]
    assert fake_google_server.members() == [] and fake_google_server.taken == {}


def test_each_ingest_request_is_reported_with_its_rows(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    added = google_client.add_members(AUDIENCE, [_member(n) for n in range(12_000)])
    removed = google_client.remove_members(AUDIENCE, [_member(1)])

    ids = fake_google_server.request_ids()
    assert added.as_report() == {
        "requestId": ids[1],
        "requests": [[ids[0], 10_000], [ids[1], 2_000]],
    }
    # A removal has no verdict to read: its request id is kept, no check queued.
    assert removed.as_report()["requests"] == [] and removed.as_report()["requestId"]


def test_request_status_is_read_with_a_get_by_request_id(
    fake_google_server: FakeGoogle, google_client: GoogleClient
) -> None:
    report = google_client.add_members(AUDIENCE, [_member(n) for n in range(40)])
    ((request_id, rows),) = report.requests
    fake_google_server.script_verdicts(
        processing=1, errors={"PROCESSING_ERROR_REASON_NO_CONSENT": 3}
    )

    first: Any = google_client.request_status(request_id)
    second: Any = google_client.request_status(request_id)

    retrieve = fake_google_server.requests_to(lambda r: "requestStatus" in r.path)[0]
    assert retrieve.method == "GET"
    assert retrieve.path == f"/v1/requestStatus:retrieve?requestId={request_id}"
    assert first["requestStatusPerDestination"][0]["requestStatus"] == "PROCESSING"
    (status,) = second["requestStatusPerDestination"]
    assert status["requestStatus"] == "SUCCESS"
    ingested = status["audienceMembersIngestionStatus"]["userDataIngestionStatus"]
    assert ingested["recordCount"] == str(rows) == "40"
    assert ingested["uploadMatchRateRange"] == "MATCH_RATE_RANGE_20_TO_30"
    assert status["errorInfo"]["errorCounts"] == [
        {"reason": "PROCESSING_ERROR_REASON_NO_CONSENT", "recordCount": "3"}
    ]
    with pytest.raises(PlatformError) as caught:
        google_client.request_status("no-such-request")
    assert caught.value.status == 404
