"""describe_consent, approve_consent and decline_consent: the rules behind the consent screen."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.connect.models import IntegrationToken
from partnerlink.problems import DomainError
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.connect.conftest import (
    World,
    approve,
    build_world,
    fetch_all,
    fetch_one,
    new_integration_token,
)
from tests.factories import create_merchant_account, create_partner, create_profile, create_store


def _error(call: Callable[[], object]) -> DomainError:
    with pytest.raises(DomainError) as raised:
        call()
    return raised.value


def test_describe_shows_partner_and_status(client: TestClient, session: Session) -> None:
    partner = create_partner(session, ereceipt=True, frame_origins=["https://pos.example/"])
    token = new_integration_token(client, partner)
    view = service.describe_consent(session, integration_token=token, client_id=partner.client_id)
    assert view == service.ConsentView(
        partner_id=partner.partner.id,
        partner_name="Acme POS",
        pos_type="acme-pos",
        ereceipt_offered=True,
        frame_origins=["https://pos.example"],
        status="pending",
    )


def test_describe_unknown_client_is_not_found(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    error = _error(
        lambda: service.describe_consent(session, integration_token=token, client_id="plk_ci_no")
    )
    assert (error.status, error.code) == (404, "unknown_client")
    session.rollback()


def test_describe_unknown_or_foreign_token_is_not_found(
    client: TestClient, session: Session, world: World
) -> None:
    other = create_partner(session, name="Other", pos_type="other")
    foreign = new_integration_token(client, other)
    for token in ("plk_it_none", foreign, ""):
        error = _error(
            partial(
                service.describe_consent,
                session,
                integration_token=token,
                client_id=world.partner.client_id,
            )
        )
        assert (error.status, error.code) == (404, "unknown_integration_token")
    session.rollback()


def test_describe_expired_token_reads_cancelled(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    settings.integration_token_ttl_seconds = 1
    token = new_integration_token(client, world.partner)
    time.sleep(1.1)
    view = service.describe_consent(
        session, integration_token=token, client_id=world.partner.client_id
    )
    assert view.status == "cancelled"
    session.rollback()


def test_approve_with_a_profile_creates_a_store_for_the_partner(
    client: TestClient, session: Session, world: World
) -> None:
    paris = create_profile(session, world.merchant, name="Bistro Paris")
    create_store(session, paris, name="Rive Gauche", country_code="FR", currency="EUR")
    token = new_integration_token(client, world.partner)
    store_id = approve(session, world, token, profile_id=paris.id)
    store = fetch_one(session, select(Store).where(Store.id == store_id))
    assert store.profile_id == paris.id and store.manual is False
    assert store.name == "Bistro Paris – Acme POS"
    assert store.pos_type == "acme-pos"
    # Placed like the profile's other store, until the partner's PUT /v1/stores.
    assert (store.country_code, store.currency) == ("FR", "EUR")
    row = fetch_one(session, select(IntegrationToken))
    assert (row.status, row.store_id, row.merchant_id) == ("finished", store_id, world.merchant.id)
    assert row.finished_at is not None


def test_store_of_an_empty_profile_is_left_unplaced(
    client: TestClient, session: Session, world: World
) -> None:
    empty = create_profile(session, world.merchant, name="New Venture")
    token = new_integration_token(client, world.partner)
    store_id = approve(session, world, token, profile_id=empty.id)
    store = fetch_one(session, select(Store).where(Store.id == store_id))
    # No placeholder: unset until the partner's PUT /v1/stores (CONTRACT.md §6).
    assert (store.country_code, store.currency, store.profile_id) == (None, None, empty.id)


def test_approve_with_a_store_uses_it(client: TestClient, session: Session, world: World) -> None:
    token = new_integration_token(client, world.partner)
    assert approve(session, world, token, store_id=world.store.id) == world.store.id
    store = fetch_one(session, select(Store).where(Store.id == world.store.id))
    assert store.pos_type == "acme-pos"
    assert len(fetch_all(session, select(Store))) == 1


def test_green_invoices_is_set_when_the_partner_offers_receipts(
    client: TestClient, session: Session
) -> None:
    world = build_world(session, ereceipt=True)
    token = new_integration_token(client, world.partner)
    approve(session, world, token, green_invoices=True)
    assert fetch_one(session, select(Store)).green_invoices is True
    assert fetch_one(session, select(IntegrationToken)).green_invoices is True


def test_green_invoices_is_ignored_when_the_partner_does_not_offer_receipts(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token, green_invoices=True)
    assert fetch_one(session, select(Store)).green_invoices is False
    assert fetch_one(session, select(IntegrationToken)).green_invoices is False


@pytest.mark.parametrize("choice", [{}, {"both": True}])
def test_approve_needs_exactly_one_of_profile_and_store(
    client: TestClient, session: Session, world: World, choice: dict[str, bool]
) -> None:
    token = new_integration_token(client, world.partner)
    ids = {"profile_id": world.profile.id, "store_id": world.store.id} if choice else {}
    error = _error(
        lambda: service.approve_consent(
            session,
            integration_token=token,
            client_id=world.partner.client_id,
            merchant_id=world.merchant.id,
            profile_id=ids.get("profile_id"),
            store_id=ids.get("store_id"),
        )
    )
    assert error.status == 400
    session.rollback()


def test_another_merchants_profile_or_store_is_not_found_and_changes_nothing(
    client: TestClient, session: Session, world: World
) -> None:
    stranger = create_merchant_account(session, email="other@example.com")
    token = new_integration_token(client, world.partner)
    for ids in ({"profile_id": world.profile.id}, {"store_id": world.store.id}):
        error = _error(
            partial(
                service.approve_consent,
                session,
                integration_token=token,
                client_id=world.partner.client_id,
                merchant_id=stranger.id,
                profile_id=ids.get("profile_id"),
                store_id=ids.get("store_id"),
            )
        )
        assert error.status == 404
    session.commit()  # what a caller that swallows the error would do
    assert fetch_one(session, select(IntegrationToken)).status == "pending"
    assert fetch_one(session, select(Store)).pos_type is None


def test_second_approval_answers_410(client: TestClient, session: Session, world: World) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    error = _error(lambda: approve(session, world, token, profile_id=world.profile.id))
    assert (error.status, error.code) == (410, "integration_token_gone")
    session.rollback()
    assert len(fetch_all(session, select(Store))) == 1


def test_approving_a_declined_or_expired_token_answers_410(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    declined = new_integration_token(client, world.partner)
    service.decline_consent(session, integration_token=declined, client_id=world.partner.client_id)
    session.commit()
    settings.integration_token_ttl_seconds = 1
    expired = new_integration_token(client, world.partner)
    time.sleep(1.1)
    for token in (declined, expired):
        error = _error(partial(approve, session, world, token))
        assert (error.status, error.code) == (410, "integration_token_gone")
        session.rollback()


def test_decline_cancels_once(client: TestClient, session: Session, world: World) -> None:
    token = new_integration_token(client, world.partner)
    service.decline_consent(session, integration_token=token, client_id=world.partner.client_id)
    session.commit()
    assert fetch_one(session, select(IntegrationToken)).status == "cancelled"
    error = _error(
        lambda: service.decline_consent(
            session, integration_token=token, client_id=world.partner.client_id
        )
    )
    assert (error.status, error.code) == (410, "integration_token_gone")
    session.rollback()


def test_decline_after_approval_answers_410(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    error = _error(
        lambda: service.decline_consent(
            session, integration_token=token, client_id=world.partner.client_id
        )
    )
    assert error.status == 410
    session.rollback()
    assert fetch_one(session, select(IntegrationToken)).status == "finished"


def test_odd_ids_are_refused_without_a_database_error(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    for odd in ("\x00", "é" * 500, "' OR 1=1 --"):
        error = _error(
            partial(
                service.approve_consent,
                session,
                integration_token=token,
                client_id=world.partner.client_id,
                merchant_id=world.merchant.id,
                store_id=odd,
            )
        )
        assert error.status == 404
        session.rollback()
        error = _error(
            partial(service.describe_consent, session, integration_token=token, client_id=odd)
        )
        assert error.code == "unknown_client"
        session.rollback()
