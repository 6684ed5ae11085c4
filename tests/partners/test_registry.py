"""The partner registry: registration, credentials that authenticate, secret rotation."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from partnerlink.partners.service import (
    authenticate_partner,
    frame_origin,
    list_partners,
    register_partner,
    rotate_client_secret,
)
from partnerlink.problems import Conflict, InvalidCredentials, NotFound, ValidationFailed


def test_a_registered_partner_authenticates_with_its_secret_shown_once(session: Session) -> None:
    registered = register_partner(session, name="  Till Co ", pos_type="till-co")
    partner = registered.partner

    assert partner.name == "Till Co"
    assert partner.client_id.startswith("plk_ci_")
    assert registered.client_secret.startswith("plk_cs_")
    assert registered.client_secret not in partner.client_secret_hash  # only the digest is kept
    assert authenticate_partner(session, partner.client_id, registered.client_secret) is partner
    assert [p.pos_type for p in list_partners(session)] == ["till-co"]


def test_a_sandbox_partner_carries_test_credentials(session: Session) -> None:
    registered = register_partner(session, name="Sandbox", pos_type="sandbox-pos", sandbox=True)

    assert registered.partner.client_id.startswith("plk_ci_test_")
    assert registered.client_secret.startswith("plk_cs_test_")


def test_unknown_id_wrong_secret_and_inactive_partner_are_refused_alike(session: Session) -> None:
    registered = register_partner(session, name="Till Co", pos_type="till-co")
    client_id = registered.partner.client_id

    for presented_id, secret in [
        ("plk_ci_nobody", registered.client_secret),
        (client_id, registered.client_secret + "x"),
    ]:
        with pytest.raises(InvalidCredentials):
            authenticate_partner(session, presented_id, secret)
    registered.partner.active = False
    with pytest.raises(InvalidCredentials):
        authenticate_partner(session, client_id, registered.client_secret)


def test_rotating_the_secret_ends_the_old_one_at_once(session: Session) -> None:
    registered = register_partner(session, name="Till Co", pos_type="till-co")
    client_id = registered.partner.client_id

    new_secret = rotate_client_secret(session, client_id)

    assert new_secret != registered.client_secret
    assert authenticate_partner(session, client_id, new_secret) is registered.partner
    with pytest.raises(InvalidCredentials):
        authenticate_partner(session, client_id, registered.client_secret)
    with pytest.raises(NotFound):
        rotate_client_secret(session, "plk_ci_nobody")


def test_a_pos_type_names_one_partner_and_must_be_a_slug(session: Session) -> None:
    register_partner(session, name="Till Co", pos_type="till-co")

    with pytest.raises(Conflict):
        register_partner(session, name="Another", pos_type="till-co")
    with pytest.raises(ValidationFailed):
        register_partner(session, name="Shouting", pos_type="TILL CO")
    with pytest.raises(ValidationFailed):
        register_partner(session, name="   ", pos_type="blank-name")
    assert [p.name for p in list_partners(session)] == ["Till Co"]


@pytest.mark.parametrize(
    ("raw", "origin"),
    [
        ("https://POS.example.com", "https://pos.example.com"),
        (" https://pos.example.com:8443/ ", "https://pos.example.com:8443"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("https://*.example.com", "https://*.example.com"),
    ],
)
def test_a_frame_origin_is_kept_as_scheme_host_and_port(raw: str, origin: str) -> None:
    assert frame_origin(raw) == origin


@pytest.mark.parametrize(
    "raw",
    [
        "pos.example.com",
        "ftp://pos.example.com",
        "https://pos.example.com/page",
        "https://pos.example.com?x=1",
        "https://user@pos.example.com",
        "https://pos.example.com:port",
        "https://pos.example.com; script-src *",
    ],
)
def test_anything_but_an_origin_is_refused_rather_than_dropped(raw: str) -> None:
    with pytest.raises(ValidationFailed):
        frame_origin(raw)
