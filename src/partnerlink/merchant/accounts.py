"""Merchant accounts: create one, check its email and password."""

from __future__ import annotations

import secrets

from email_validator import EmailNotValidError, validate_email
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.kit.text import storable_text
from partnerlink.merchant.models import Merchant
from partnerlink.problems import Conflict, Unauthorized, ValidationFailed
from partnerlink.security.passwords import hash_password, verify_password

MIN_PASSWORD_LENGTH = 8


def normalize_account_email(email: str) -> str:
    try:
        # test_environment admits the reserved `.test` domain (demo@partnerlink.test).
        checked = validate_email(email.strip(), check_deliverability=False, test_environment=True)
        return checked.normalized.lower()
    except EmailNotValidError as error:
        raise ValidationFailed(
            "email is not a valid address",
            errors=[{"field": "email", "message": str(error)}],
        ) from error


def create_merchant(
    session: Session, *, email: str, password: str, name: str | None = None
) -> Merchant:
    normalized = normalize_account_email(email)
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed(
            f"password must be at least {MIN_PASSWORD_LENGTH} characters",
            errors=[{"field": "password", "message": "too short"}],
        )
    if session.scalar(select(Merchant.id).where(Merchant.email == normalized)):
        raise Conflict("a merchant with this email exists", code="email_taken")
    merchant = Merchant(email=normalized, password_hash=hash_password(password), name=name)
    session.add(merchant)
    session.flush()
    return merchant


def sandbox_merchant(session: Session, *, email: str, name: str) -> Merchant:
    """The account a sandbox partner's test stores belong to, made on first use. Nobody
    signs in to it: its password is random and never shown, and its address (under
    `.invalid`) is kept as given, since it is meant to fail `normalize_account_email`."""
    merchant = session.scalar(select(Merchant).where(Merchant.email == email))
    if merchant is None:
        merchant = Merchant(
            email=email, password_hash=hash_password(secrets.token_urlsafe(32)), name=name
        )
        session.add(merchant)
        session.flush()
    return merchant


def set_password(session: Session, *, merchant: Merchant, password: str) -> None:
    """Replaces the merchant's password (kept as its argon2id hash)."""
    merchant.password_hash = hash_password(password)
    session.flush()


def authenticate_merchant(session: Session, *, email: str, password: str) -> Merchant:
    """Same answer, and about the same time, for an unknown email and a wrong password."""
    lookup = email.strip().lower()
    # Text no account can have is not sent to the database (PostgreSQL refuses NUL).
    merchant = (
        session.scalar(select(Merchant).where(Merchant.email == lookup))
        if storable_text(lookup) and len(lookup) <= 320
        else None
    )
    if not verify_password(password, merchant.password_hash if merchant else None) or not merchant:
        raise Unauthorized()
    return merchant
