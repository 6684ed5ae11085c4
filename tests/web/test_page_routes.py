"""Page routes: a refusal renders a page and stores nothing, whatever the route wrote first."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.console.deps import ConsoleError, ConsoleRoute
from partnerlink.merchant.models import Profile
from partnerlink.problems import Conflict
from partnerlink.web.routing import PageSessionDep
from tests.factories import DEFAULT_PASSWORD, create_merchant_account
from tests.web.conftest import EMAIL
from tests.web.pages import assert_html


def _mount_failing_routes(app: FastAPI, merchant_id: str) -> None:
    router = APIRouter(route_class=ConsoleRoute)

    @router.post("/merchant/test-page-error")
    def page_error(session: PageSessionDep) -> None:
        session.add(Profile(merchant_id=merchant_id, name="written, then refused"))
        session.flush()
        raise ConsoleError(409, "Refused", "The page says no.")

    @router.post("/merchant/test-domain-error")
    def domain_error(session: PageSessionDep) -> None:
        session.add(Profile(merchant_id=merchant_id, name="written, then refused"))
        session.flush()
        raise Conflict("no")

    app.include_router(router)


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
