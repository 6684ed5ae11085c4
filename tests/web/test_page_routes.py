"""Page routes: a refusal renders a page and stores nothing, whatever the route wrote first."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.routing import Mount

from partnerlink.merchant.models import Profile
from partnerlink.merchant.pages import ConsoleError, ConsoleRoute
from partnerlink.problems import Conflict
from partnerlink.web.routing import PageSessionDep
from tests.factories import DEFAULT_PASSWORD, create_merchant_account
from tests.web.conftest import EMAIL
from tests.web.pages import assert_html


def _mount_failing_routes(app: FastAPI, merchant_id: str) -> None:
    """Two console routes that write, then refuse, added to the console's own app."""
    router = APIRouter(route_class=ConsoleRoute)

    @router.post("/test-page-error")
    def page_error(session: PageSessionDep) -> None:
        session.add(Profile(merchant_id=merchant_id, name="written, then refused"))
        session.flush()
        raise ConsoleError(409, "Refused", "The page says no.")

    @router.post("/test-domain-error")
    def domain_error(session: PageSessionDep) -> None:
        session.add(Profile(merchant_id=merchant_id, name="written, then refused"))
        session.flush()
        raise Conflict("no")

    console = next(r.app for r in app.routes if isinstance(r, Mount) and r.path == "/merchant")
    assert isinstance(console, FastAPI)
    console.include_router(router)


def _profiles(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Profile)) or 0
    session.rollback()
    return count


def test_a_page_refusal_rolls_back_what_the_route_wrote(
    app: FastAPI, client: TestClient, session: Session
) -> None:
    merchant = create_merchant_account(session, email=EMAIL)
    _mount_failing_routes(app, merchant.id)
    answer = client.post("/merchant/test-page-error")
    assert_html(answer, 409)
    assert "The page says no." in answer.text
    answer = client.post("/merchant/test-domain-error")
    assert_html(answer, 409)
    assert _profiles(session) == 0


def test_console_sign_in_is_paused_after_repeated_failures(
    client: TestClient, session: Session
) -> None:
    create_merchant_account(session, email=EMAIL)
    for _ in range(10):
        wrong = {"email": EMAIL, "password": "wrong-pass"}
        assert client.post("/merchant/signin", data=wrong).status_code == 401
    answer = client.post("/merchant/signin", data={"email": EMAIL, "password": DEFAULT_PASSWORD})
    assert_html(answer, 429)
    assert int(answer.headers["retry-after"]) > 0
    assert "set-cookie" not in answer.headers


def test_the_console_answers_its_unknown_paths_with_pages_and_the_merchant_api_with_json(
    client: TestClient,
) -> None:
    # The console is an application of its own (console/app.py): its errors are pages.
    assert_html(client.get("/merchant/no-such-page"), 404)
    assert_html(client.delete("/merchant/signin"), 405)
    # /merchant itself is the console's home (a redirect to sign in), not a slash redirect.
    home = client.get("/merchant", follow_redirects=False)
    assert (home.status_code, home.headers["location"]) == (303, "/merchant/signin")
    # The merchant JSON API keeps its problem+json, 404s and 405s included.
    unknown = client.get("/merchant/api/no-such-thing")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("application/problem+json")
    wrong_method = client.delete("/merchant/api/profiles")
    assert wrong_method.status_code == 405
    assert wrong_method.headers["content-type"].startswith("application/problem+json")


def test_metrics_name_console_routes_with_their_mount_prefix(client: TestClient) -> None:
    client.get("/merchant/signin")
    scraped = client.get("/metrics").text
    assert 'route="/merchant/signin"' in scraped
    assert 'route="/signin"' not in scraped
