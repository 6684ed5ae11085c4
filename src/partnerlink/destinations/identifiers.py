"""A customer's stored fields as each platform matches them (CONTRACT §11).

The normalization is the §8 export's (`audiences.hashing`), so a sync and a file hash a
person alike: Meta's by our rules, Google's by Google's own formatter
(google-ads-datamanager-util, imported on first use). Only Google's `regionCode` and
`postalCode` leave plain, as Google asks; every other value leaves as a lower-case hex
SHA-256.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partnerlink.audiences.hashing import (
    google_email,
    google_family_name,
    google_given_name_hash,
    google_phone,
    google_phone_number,
    google_postal_code,
    google_region,
    google_rules,
    hashed,
    meta_hashes,
    normalized_email,
)

# Meta's user_data keys, in META_SCHEMA's order (EMAIL, PHONE, FN, LN, CT, COUNTRY).
META_USER_DATA_KEYS = ("em", "ph", "fn", "ln", "ct", "country")


@dataclass(frozen=True)
class Identity:
    """What PartnerLink stores about a customer that a platform can match on."""

    email: str | None = None
    phone: str | None = None  # E.164, as stored
    first_name: str | None = None
    last_name: str | None = None
    city: str | None = None
    country: str | None = None  # ISO 3166-1 alpha-2
    postal_code: str | None = None

    def row(self) -> tuple[str | None, ...]:
        """The export's CustomerRow order."""
        return (
            self.email,
            self.phone,
            self.first_name,
            self.last_name,
            self.city,
            self.country,
            self.postal_code,
        )


def meta_row(identity: Identity) -> tuple[str, str, str, str, str, str]:
    """The six hashes of one audience row (schema EMAIL, PHONE, FN, LN, CT, COUNTRY), ""
    for an unknown value: exactly the §8 `meta` file's row."""
    return meta_hashes(identity.row())


def meta_user_data(identity: Identity) -> dict[str, list[str]]:
    """Conversions API `user_data`: each known value as a one-element list of its hash."""
    return {
        key: [value]
        for key, value in zip(META_USER_DATA_KEYS, meta_row(identity), strict=True)
        if value
    }


def google_user_data(identity: Identity) -> dict[str, Any]:
    """Data Manager `userData`: the email's and the E.164 phone's hashes, and an address
    only when first name, last name, country and postal code are all known (each as
    Google's formatter has it; a value it refuses counts as unknown)."""
    identifiers: list[dict[str, Any]] = []
    email = google_email(identity.email)
    if email:
        identifiers.append({"emailAddress": hashed(email)})
    phone = google_phone_number(identity.phone)
    if phone:
        identifiers.append({"phoneNumber": hashed(phone)})
    given = google_given_name_hash(identity.first_name)
    family = google_family_name(identity.last_name)
    region = google_region(identity.country)
    postal = google_postal_code(identity.postal_code, identity.country)
    if given and family and region and postal:
        identifiers.append(
            {
                "address": {
                    "givenName": given,
                    "familyName": hashed(family),
                    "regionCode": region,
                    "postalCode": postal,
                }
            }
        )
    return {"userIdentifiers": identifiers}


def rows_basis(platform: str) -> str | None:
    """What a platform's audience rows depend on besides the customer's columns, for
    the sync's basis (sync/audience_sync.py): Google's formatter and its version, so
    that rows held from before it (or another version) are compared once and a changed
    row replaced; None for Meta, whose rules are ours (sync/audience_sync.ROW_FORMAT)."""
    return google_rules() if platform == "google" else None


def has_match_key(identity: Identity) -> bool:
    """A platform can match only on an email or a phone (the §8 export's rule)."""
    return bool(normalized_email(identity.email) or google_phone(identity.phone))
