"""Erasure in free text: an erased person's email, phone and names in orders' details
(`orderDetails`, and every string of the items and payments in it) become `[erased]`
(CONTRACT §12).

The partner writes what it likes there (a note, a licence plate with its owner, a
delivery contact), so every string is searched, at any depth. A phone may be written
in any form: besides its E.164 and the form the order carried it in, any run of
digits and separators that parses (in the store's country) to the erased number is
replaced.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

import phonenumbers

from partnerlink.customers.normalize import normalize_phone

ERASED = "[erased]"
# Digits with the separators people write between them, optionally after a `+`.
_PHONE_LIKE = re.compile(r"\+?\(?\d[\d\s().\-/]{4,}\d")
_SHORTEST_NAME = 2  # a one-letter name would erase every lone letter of the text


@dataclass(frozen=True)
class Needles:
    """What to erase: literal forms (matched ignoring case) and the phones as E.164."""

    literal: re.Pattern[str] | None
    phones: frozenset[str]
    region: str | None

    def scrub(self, value: object) -> object:
        """The value with every occurrence replaced, strings at any depth of lists and dicts."""
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items()}
        return value

    def _text(self, text: str) -> str:
        if self.literal is not None:
            text = self.literal.sub(ERASED, text)
        if self.phones:
            text = _PHONE_LIKE.sub(self._phone_or_same, text)
        return text

    def _phone_or_same(self, match: re.Match[str]) -> str:
        found = match.group(0)
        return ERASED if normalize_phone(found, self.region) in self.phones else found


def _phone_forms(e164: str) -> set[str]:
    """The E.164, its digits without `+`, and the national number's digits."""
    forms = {e164, e164.lstrip("+")}
    with contextlib.suppress(phonenumbers.NumberParseException):
        forms.add(str(phonenumbers.parse(e164, None).national_number))
    return forms


def needles(
    *,
    emails: Iterable[str],
    phones: Iterable[str],
    raw_phones: Iterable[str] = (),
    names: Iterable[str] = (),
    region: str | None = None,
) -> Needles:
    """Names match as whole words; emails and phone forms anywhere."""
    e164s = frozenset(p for p in phones if p)
    anywhere = {e for e in emails if e} | {r.strip() for r in raw_phones if r and r.strip()}
    for phone in e164s:
        anywhere |= _phone_forms(phone)
    words = {n.strip() for n in names if n and len(n.strip()) >= _SHORTEST_NAME}
    parts = [re.escape(a) for a in sorted(anywhere, key=len, reverse=True)]
    parts += [rf"(?<!\w){re.escape(w)}(?!\w)" for w in sorted(words, key=len, reverse=True)]
    literal = re.compile("|".join(parts), re.IGNORECASE) if parts else None
    return Needles(literal, e164s, region)
