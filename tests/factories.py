"""Small builders for test data, written through the real services."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from partnerlink.merchant.accounts import create_merchant
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.partners.models import Partner
from partnerlink.partners.service import register_partner
from partnerlink.stores.models import Store
from partnerlink.stores.service import open_connection
from partnerlink.tokens.service import issue_access_token, issue_refresh_token

DEFAULT_PASSWORD = "correct horse battery"


@dataclass
class PartnerWithSecret:
    partner: Partner
    client_id: str
    client_secret: str


def create_partner(
    session: Session,
    *,
    name: str = "Acme POS",
    pos_type: str = "acme-pos",
    ereceipt: bool = False,
    frame_origins: list[str] | None = None,
) -> PartnerWithSecret:
    registered = register_partner(
        session, name=name, pos_type=pos_type, ereceipt=ereceipt, frame_origins=frame_origins
    )
    session.commit()
    return PartnerWithSecret(
        registered.partner, registered.partner.client_id, registered.client_secret
    )


def create_merchant_account(
    session: Session, *, email: str = "owner@example.com", password: str = DEFAULT_PASSWORD
) -> Merchant:
    merchant = create_merchant(session, email=email, password=password, name="Owner")
    session.commit()
    return merchant


def create_profile(session: Session, merchant: Merchant, *, name: str = "Bistro Group") -> Profile:
    profile = Profile(merchant_id=merchant.id, name=name)
    session.add(profile)
    session.commit()
    return profile


def create_store(
    session: Session,
    profile: Profile,
    *,
    name: str = "Bistro Central",
    country_code: str = "US",
    currency: str = "USD",
    manual: bool = False,
    green_invoices: bool = False,
) -> Store:
    store = Store(
        profile_id=profile.id,
        name=name,
        address="1 Main St",
        city="Springfield",
        country_code=country_code,
        currency=currency,
        manual=manual,
        green_invoices=green_invoices,
    )
    session.add(store)
    session.commit()
    return store


@dataclass
class ConnectedStoreFixture:
    partner: PartnerWithSecret
    merchant: Merchant
    profile: Profile
    store: Store
    access_token: str
    refresh_token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.access_token}"}


def create_connected_store(
    session: Session,
    *,
    ereceipt: bool = False,
    green_invoices: bool = False,
    country_code: str = "US",
    currency: str = "USD",
    email: str = "owner@example.com",
    pos_type: str = "acme-pos",
) -> ConnectedStoreFixture:
    """A partner, a merchant with one profile and store, and a live consent connection."""
    partner = create_partner(session, ereceipt=ereceipt, pos_type=pos_type)
    merchant = create_merchant_account(session, email=email)
    profile = create_profile(session, merchant)
    store = create_store(
        session,
        profile,
        green_invoices=green_invoices,
        country_code=country_code,
        currency=currency,
    )
    connection = open_connection(
        session,
        store_id=store.id,
        partner_id=partner.partner.id,
        method="consent",
        pos_type=partner.partner.pos_type,
    )
    access, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=3600)
    refresh = issue_refresh_token(session, connection_id=connection.id)
    session.commit()
    return ConnectedStoreFixture(partner, merchant, profile, store, access, refresh)


def connect_another_partner(
    session: Session,
    shop: ConnectedStoreFixture,
    *,
    name: str = "Table Booker",
    pos_type: str = "table-booker",
) -> ConnectedStoreFixture:
    """A second partner paired to `shop`'s store: the same store, another partner's token."""
    partner = create_partner(session, name=name, pos_type=pos_type)
    connection = open_connection(
        session,
        store_id=shop.store.id,
        partner_id=partner.partner.id,
        method="pairing",
        pos_type=partner.partner.pos_type,
    )
    access, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=None)
    refresh = issue_refresh_token(session, connection_id=connection.id)
    session.commit()
    return ConnectedStoreFixture(partner, shop.merchant, shop.profile, shop.store, access, refresh)
