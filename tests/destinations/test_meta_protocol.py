"""Our Meta client against a local server speaking the Marketing API's HTTP."""

from __future__ import annotations

import email.utils
import socket
import time
from datetime import UTC, datetime

import pytest

from partnerlink.destinations.meta import MetaClient, meta_purchase_event
from partnerlink.destinations.platform import PlatformError, platform_client
from tests.destinations import fake_meta
from tests.destinations.fake_meta import AUDIENCE_ID, DATASET_ID, FakeMeta


def _row(n: int) -> list[str]:
    return [f"{n:064x}", "", f"{n + 1:064x}", "", "", ""]


def _event(n: int) -> dict[str, object]:
    return meta_purchase_event(
        event_id=f"pl-{n}",
        created_at=datetime(2026, 11, 1, 12, 0, tzinfo=UTC),
        value=12.5,
        currency="EUR",
        order_id=f"order-{n}",
        user_data={"em": [f"{n:064x}"]},
    )


def test_adding_users_sends_one_session_in_requests_of_at_most_10000_rows(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    rows = [_row(n) for n in range(25_000)]

    report = meta_client.add_users(AUDIENCE_ID, rows)

    requests = fake_meta_server.requests
    assert [len(r.json()["payload"]["data"]) for r in requests] == [10_000, 10_000, 5_000]
    sessions = [r.json()["session"] for r in requests]
    assert {s["session_id"] for s in sessions} == {report.session_id}
    assert [s["batch_seq"] for s in sessions] == [1, 2, 3]
    assert [s["last_batch_flag"] for s in sessions] == [False, False, True]
    assert {s["estimated_num_total"] for s in sessions} == {25_000}
    assert all(r.method == "POST" for r in requests)
    assert requests[0].path == f"/{fake_meta.VERSION}/{AUDIENCE_ID}/users"
    assert requests[0].json()["payload"]["schema"] == [
        "EMAIL",
        "PHONE",
        "FN",
        "LN",
        "CT",
        "COUNTRY",
    ]
    # The token travels in the header, never in the URL where proxies log it.
    assert all(r.headers["authorization"] == f"Bearer {fake_meta.ACCESS_TOKEN}" for r in requests)
    assert all(fake_meta.ACCESS_TOKEN not in r.path for r in requests)
    assert len(fake_meta_server.audiences[AUDIENCE_ID]) == 25_000
    assert report.as_report() == {"num_received": 25_000, "num_invalid_entries": 0}


def test_removing_users_sends_the_same_body_with_delete(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    meta_client.add_users(AUDIENCE_ID, [_row(1), _row(3)])
    meta_client.remove_users(AUDIENCE_ID, [_row(1)])

    removal = fake_meta_server.requests[-1]
    assert removal.method == "DELETE"
    assert removal.json()["payload"]["data"] == [_row(1)]
    assert set(removal.json()["session"]) == fake_meta.SESSION_KEYS
    assert fake_meta_server.audiences[AUDIENCE_ID] == {tuple(_row(3))}


def test_metas_count_of_invalid_entries_is_reported(meta_client: MetaClient) -> None:
    report = meta_client.add_users(AUDIENCE_ID, [_row(1), ["", "", "", "", "", ""]])
    assert report.as_report() == {"num_received": 2, "num_invalid_entries": 1}
    assert report.rejected == 1


def test_events_go_1000_a_request_in_metas_shape(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    report = meta_client.send_events(DATASET_ID, [_event(n) for n in range(2_500)])

    assert [len(r.json()["data"]) for r in fake_meta_server.requests] == [1_000, 1_000, 500]
    assert fake_meta_server.requests[0].path == f"/{fake_meta.VERSION}/{DATASET_ID}/events"
    assert report.events_received == 2_500 and report.rejected == 0
    assert report.as_report()["events_received"] == 2_500
    assert fake_meta_server.datasets[DATASET_ID][0] == {
        "event_name": "Purchase",
        "event_time": 1_793_534_400,
        "action_source": "physical_store",
        "event_id": "pl-0",
        "user_data": {"em": [f"{0:064x}"]},
        "custom_data": {"value": 12.5, "currency": "EUR", "order_id": "order-0"},
    }


def test_a_refused_event_is_found_and_counted_the_others_are_sent(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    fake_meta_server.refuse_events("pl-7", "pl-300")

    report = meta_client.send_events(DATASET_ID, [_event(n) for n in range(1_000)])

    assert report.rejected == 2
    assert report.events == 1_000
    stored = {event["event_id"] for event in fake_meta_server.datasets[DATASET_ID]}
    assert len(stored) == 998 and "pl-7" not in stored and "pl-300" not in stored
    assert len(fake_meta_server.requests) < 60  # halving, not one request per event


@pytest.mark.parametrize("code", [4, 17, 32, 613, 80_003])
def test_rate_limits_are_retried_after_what_meta_asks(
    fake_meta_server: FakeMeta, meta_client: MetaClient, code: int
) -> None:
    fake_meta_server.rate_limit_next(retry_after="7", code=code)
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users(AUDIENCE_ID, [_row(1)])
    assert caught.value.kind == "retry"
    assert caught.value.retry_after == 7.0


def test_a_429_with_an_http_date_retry_after(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    fake_meta_server.rate_limit_next(retry_after=when, code=17, status=429)
    with pytest.raises(PlatformError) as caught:
        meta_client.send_events(DATASET_ID, [_event(1)])
    assert caught.value.kind == "retry"
    assert caught.value.retry_after is not None and 100 < caught.value.retry_after <= 120


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retried(
    fake_meta_server: FakeMeta, meta_client: MetaClient, status: int
) -> None:
    fake_meta_server.server_error_next(status)
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users(AUDIENCE_ID, [_row(1)])
    assert caught.value.kind == "retry" and caught.value.status == status


def test_an_expired_token_needs_the_merchant_and_the_message_holds_no_token(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    fake_meta_server.expired_token_next()  # Meta's message echoes the token here
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users(AUDIENCE_ID, [_row(1)])
    assert caught.value.kind == "credentials"
    assert "190" in caught.value.message and "new one" in caught.value.message
    assert fake_meta.ACCESS_TOKEN not in caught.value.message
    assert fake_meta.ACCESS_TOKEN not in repr(caught.value)


def test_a_wrong_token_is_a_credentials_error(fake_meta_server: FakeMeta) -> None:
    with (
        MetaClient(
            graph_url=fake_meta_server.graph_url,
            api_version=fake_meta.VERSION,
            access_token="wrong-token",
        ) as client,
        pytest.raises(PlatformError) as caught,
    ):
        client.send_events(DATASET_ID, [_event(1)])
    assert caught.value.kind == "credentials"


def test_an_unknown_audience_is_invalid(meta_client: MetaClient) -> None:
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users("999", [_row(1)])
    assert caught.value.kind == "invalid" and "audience or dataset id" in caught.value.message


def test_an_id_that_is_not_digits_never_leaves(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users("../me", [_row(1)])
    assert caught.value.kind == "invalid"
    assert fake_meta_server.requests == []


def test_an_answer_that_is_not_json_is_retried(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    fake_meta_server.garbage_next(status=502)
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users(AUDIENCE_ID, [_row(1)])
    assert caught.value.kind == "retry"


def test_a_hanging_platform_times_out_and_is_retried(fake_meta_server: FakeMeta) -> None:
    fake_meta_server.hang_next(seconds=30)
    started = time.monotonic()
    with (
        platform_client(request_seconds=0.5) as http,
        MetaClient(
            graph_url=fake_meta_server.graph_url,
            api_version=fake_meta.VERSION,
            access_token=fake_meta.ACCESS_TOKEN,
            client=http,
        ) as client,
        pytest.raises(PlatformError) as caught,
    ):
        client.add_users(AUDIENCE_ID, [_row(1)])
    assert caught.value.kind == "retry" and "in time" in caught.value.message
    assert time.monotonic() - started < 5


def test_a_refused_connection_is_retried() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        MetaClient(
            graph_url=f"http://127.0.0.1:{port}", api_version="v24.0", access_token="t"
        ) as client,
        pytest.raises(PlatformError) as caught,
    ):
        client.add_users(AUDIENCE_ID, [_row(1)])
    assert caught.value.kind == "retry" and "reached" in caught.value.message


def test_a_failure_midway_says_how_many_rows_were_taken(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    fake_meta_server.answer_next(200, {"num_received": 10_000, "num_invalid_entries": 0})
    fake_meta_server.server_error_next(503)
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users(AUDIENCE_ID, [_row(n) for n in range(15_000)])
    assert caught.value.kind == "retry" and caught.value.done == 10_000
