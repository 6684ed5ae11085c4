"""The email an alert sends, in a store owner's words: the business, the destination,
what happened and what to do, with a link to the Ad platforms page. It holds no
credential and no customer data: the destination is named by its platform, kind and
segment, and the only error text is `lastError`'s, which never holds a credential
(sync/engine.py)."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from typing import Any

from partnerlink.destinations.alerts.queries import STALE

PLATFORMS = {"meta": "Meta", "google": "Google"}


def destination_in_words(platform: str, kind: str, segment: str | None) -> str:
    return f"{_short_name(platform, kind)}{_segment(kind, segment)}"


def _short_name(platform: str, kind: str) -> str:
    """For a subject: no parenthesis nor quote, which Python's header folding mangles."""
    name = PLATFORMS.get(platform, platform)
    return f"{name} audience" if kind == "audience" else f"{name} sales destination"


def _segment(kind: str, segment: str | None) -> str:
    return f' (segment "{segment}")' if kind == "audience" else " (offline conversions)"


def _one_line(text: str) -> str:
    """A header's text: no line break or control character can reach it."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def compose(letter: Any, *, sender: str, stale_hours: float, public_url: str) -> EmailMessage:
    """The message for one row of queries.letters."""
    business = _one_line(letter.business)
    destination = destination_in_words(letter.platform, letter.kind, letter.segment)
    short = _short_name(letter.platform, letter.kind)
    page = f"{public_url}/merchant/profiles/{letter.profile_id}/ad-platforms"
    error = (letter.last_error or {}).get("message")
    hours = f"{stale_hours:g} hour{'' if stale_hours == 1 else 's'}"
    if letter.state == STALE:
        subject = f"{business}: your {short} has not synced for {hours}"
        opening = (
            f"PartnerLink has not been able to sync the {destination} of {business} "
            f"for more than {hours}. It keeps trying by itself."
        )
        happened = f"The last try said: {error}" if error else "No sync went through."
        todo = (
            "Open the Ad platforms page to see what it says. If the platform cannot be "
            "reached, check its status page and your ad account; otherwise do what the "
            'page says, then click "Sync now".'
        )
    else:
        subject = f"Action needed: {business}'s {short} stopped syncing"
        opening = (
            f"PartnerLink could not sync the {destination} of {business}, and will not "
            "try again until you act."
        )
        happened = (
            error or f"{PLATFORMS.get(letter.platform, 'The platform')} refused the last sync."
        )
        todo = (
            "Open the Ad platforms page: give new credentials there (or, if the ids "
            'were refused, disconnect and connect again with the right ones), then click "Sync now".'
        )
    message = EmailMessage()
    message["From"] = sender
    message["To"] = letter.email
    message["Subject"] = _one_line(subject)
    message["Date"] = formatdate()
    message["Message-ID"] = make_msgid(domain=parseaddr(sender)[1].rpartition("@")[2])
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no out-of-office replies
    message.set_content(
        f"Hello,\n\n{opening}\n\n"
        f"What happened: {happened}\n\n"
        f"What to do: {todo}\n{page}\n\n"
        "You get one email for this; PartnerLink writes again only if the state of "
        "this destination changes.\n\n"
        "PartnerLink\n"
    )
    return message
