"""Secrets we must read back (an ad platform's access token), sealed at rest.

AES-256-GCM under a key derived by HKDF-SHA256 from the service key
(PARTNERLINK_SECRET_KEY or data/secret.key): a dump or a backup of the database
shows only ciphertext. The `purpose` is bound as associated data, so a sealed
value copied into another column or another row's purpose does not open. Changing
the service key makes sealed values unreadable, as it makes upload URLs invalid:
their owners then ask for new credentials.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_VERSION = "v1"
_INFO = b"partnerlink sealed secrets v1"
_NONCE_BYTES = 12


class SealBroken(Exception):
    """The sealed value does not open under this service key (changed key, or tampering)."""


def _key(signing_key: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(signing_key)


def seal(signing_key: bytes, purpose: str, value: dict[str, Any]) -> str:
    """The JSON value, encrypted and authenticated: `v1.<base64url(nonce + ciphertext)>`."""
    nonce = os.urandom(_NONCE_BYTES)
    plain = json.dumps(value, separators=(",", ":")).encode()
    sealed = AESGCM(_key(signing_key)).encrypt(nonce, plain, purpose.encode())
    return f"{_VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def unseal(signing_key: bytes, purpose: str, sealed: str) -> dict[str, Any]:
    version, _, body = sealed.partition(".")
    if version != _VERSION:
        raise SealBroken()
    try:
        raw = base64.urlsafe_b64decode(body.encode())
        plain = AESGCM(_key(signing_key)).decrypt(
            raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], purpose.encode()
        )
    except (InvalidTag, ValueError) as error:
        raise SealBroken() from error
    value = json.loads(plain)
    if not isinstance(value, dict):
        raise SealBroken()
    return value
