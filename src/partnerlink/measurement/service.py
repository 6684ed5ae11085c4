"""Campaigns and touches: creation, import, windows, and the re-classification they bring.

Both the merchant API (POST .../touches) and `partnerlink touches import` go
through `store_touches`: the campaigns a touch names exist (created with their
id as name when unknown), the touches are written (hashes only, each with the end
of its campaign's window of its kind), and every order of each customer they
match is classified again (orders/conversion.py), in the caller's transaction.
A campaign's new window (`change_windows`) moves the end of its touches' windows
and classifies again, through the same function, the orders of the customers
they match.
"""

from __future__ import annotations

import contextlib
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from partnerlink.customers.identifier_hashes import customers_hashing_to
from partnerlink.db.base import utcnow
from partnerlink.db.pages import Page, keyset_page
from partnerlink.db.raw import as_sql
from partnerlink.measurement import queries
from partnerlink.measurement.models import Campaign
from partnerlink.measurement.touches import RejectedTouch, TouchRow, parse_line, parse_touch
from partnerlink.merchant.models import Profile
from partnerlink.orders.conversion import CLICK, KINDS, VIEW, counts_until
from partnerlink.orders.reclassification import Identifiers, reclassify_customers
from partnerlink.orders.touches import MovedTouch, move_window, record_touches
from partnerlink.problems import BadRequest, Conflict

MAX_TOUCHES = 10_000  # per request
KIND_RULE = "must be click or view"
SHOWN_KINDS = 20  # touches of an unknown kind named in the refusal
LINES_PER_BATCH = 2000  # `touches import`: committed batch by batch
# Windows a campaign may set (CONTRACT.md §16); the click window's default is
# PARTNERLINK_ATTRIBUTION_WINDOW_DAYS, the setting.
CLICK_WINDOW_DAYS = (1, 90)
VIEW_WINDOW_DAYS = (0, 30)
DEFAULT_VIEW_WINDOW_DAYS = 1


class CampaignExists(Conflict):
    code = "campaign_exists"
    detail = "A campaign with this campaignId exists in this profile."


class TooManyTouches(BadRequest):
    code = "too_many_touches"
    detail = f"At most {MAX_TOUCHES} touches per request."


def list_campaigns(session: Session, *, profile_id: str) -> list[Campaign]:
    return list(session.scalars(queries.campaigns_of(profile_id)))


def campaign_page(
    session: Session, *, profile_id: str, limit: int, cursor: str | None
) -> Page[Campaign]:
    """A page of the profile's campaigns in creation order: keyed by the growing integer
    id, so a campaign created between two pages comes on a later one (CONTRACT.md §13)."""
    return keyset_page(
        session,
        queries.campaigns_unordered(profile_id),
        key=(Campaign.id,),
        limit=limit,
        cursor=cursor,
    )


def create_campaign(
    session: Session,
    *,
    profile_id: str,
    campaign_id: str,
    name: str,
    starts_at: datetime,
    ends_at: datetime | None,
    holdout_percent: int,
    click_window_days: int,
    view_window_days: int = DEFAULT_VIEW_WINDOW_DAYS,
) -> Campaign:
    """A new campaign with its own random salt; an existing campaignId answers 409."""
    if session.scalar(queries.find_campaign(profile_id, campaign_id)) is not None:
        raise CampaignExists()
    campaign = Campaign(
        profile_id=profile_id,
        campaign_id=campaign_id,
        name=name,
        starts_at=starts_at,
        ends_at=ends_at,
        holdout_percent=holdout_percent,
        click_window_days=click_window_days,
        view_window_days=view_window_days,
        salt=secrets.token_bytes(32),
        created_at=utcnow(),
    )
    try:
        with session.begin_nested():
            session.add(campaign)
    except IntegrityError:  # created at the same moment by another request
        raise CampaignExists() from None
    return campaign


Windows = dict[str, dict[str, int]]  # campaign id: days by touch kind


def _campaign_windows(
    session: Session, profile_id: str, touches: Sequence[TouchRow], default_click_days: int
) -> Windows:
    """The windows of the campaigns the touches name. A touch of an unknown campaign creates
    it, named by its id, starting at its first touch, with the default windows."""
    first: dict[str, datetime] = {}
    for touch in touches:
        if touch.campaign_id not in first or touch.touched_at < first[touch.campaign_id]:
            first[touch.campaign_id] = touch.touched_at
    default = {CLICK: default_click_days, VIEW: DEFAULT_VIEW_WINDOW_DAYS}
    windows: Windows = {
        campaign_id: {CLICK: click, VIEW: view}
        for campaign_id, click, view in session.execute(queries.campaign_windows(profile_id, first))
    }
    for campaign_id, starts_at in first.items():
        if campaign_id in windows:
            continue
        windows[campaign_id] = default
        with contextlib.suppress(CampaignExists):  # another import created it meanwhile
            create_campaign(
                session,
                profile_id=profile_id,
                campaign_id=campaign_id,
                name=campaign_id,
                starts_at=starts_at,
                ends_at=None,
                holdout_percent=0,
                click_window_days=default_click_days,
            )
    return windows


@dataclass(frozen=True, slots=True)
class StoredTouches:
    imported: int  # stored now
    duplicates: int  # equal to a stored touch (or an earlier one of the same import): skipped
    reclassified: int


def store_touches(
    session: Session, *, profile_id: str, touches: Sequence[TouchRow], default_click_days: int
) -> StoredTouches:
    """Writes a profile's touches and re-classifies the orders of the customers they match.
    `default_click_days`: the click window of the campaigns the touches create."""
    if not touches:
        return StoredTouches(0, 0, 0)
    windows = _campaign_windows(session, profile_id, touches, default_click_days)
    # Each touch's window: it changes only the orders made in it.
    spans = [
        (touch.touched_at, counts_until(touch.touched_at, windows[touch.campaign_id][touch.kind]))
        for touch in touches
    ]
    now = utcnow()
    rows = [
        {
            "profile_id": profile_id,
            "campaign_id": touch.campaign_id,
            "email_sha256": touch.email_sha256,
            "phone_sha256": touch.phone_sha256,
            "touched_at": touch.touched_at,
            "imported_at": now,
            "kind": touch.kind,
            "counts_until": until,
        }
        for touch, (_, until) in zip(touches, spans, strict=True)
    ]
    new = record_touches(session, rows)
    reclassified = _reclassify_matched(session, profile_id, touches, spans)
    return StoredTouches(new, len(touches) - new, reclassified)


Span = tuple[datetime, datetime]


def _reclassify_matched(
    session: Session, profile_id: str, touches: Sequence[Any], spans: Sequence[Span]
) -> int:
    """Classifies again the orders, in each touch's span, of the customers whose email or
    phone hashes to one the touch carries (`email_sha256`, `phone_sha256`); how many orders
    changed."""
    by_key: dict[str, list[Span]] = defaultdict(list)
    for touch, span in zip(touches, spans, strict=True):
        for key in {touch.email_sha256, touch.phone_sha256} - {None}:
            by_key[key].append(span)
    matched = _matched_customers(session, profile_id, set(by_key))
    periods = {
        customer: [span for key in keys if key is not None for span in by_key.get(key, ())]
        for customer, keys in matched.items()
    }
    return reclassify_customers(
        as_sql(session),
        profile_id=profile_id,
        customer_ids=matched,
        hashes=matched,
        periods=periods,
    )


def _matched_customers(session: Session, profile_id: str, keys: set[str]) -> Identifiers:
    """The profile's customers whose email or phone hashes to one of `keys`, with their
    identifier hashes (customers/identifier_hashes.py: stored hashes on PostgreSQL)."""
    return customers_hashing_to(as_sql(session), profile_id=profile_id, keys=keys)


def change_windows(
    session: Session, campaign: Campaign, *, click_days: int | None, view_days: int | None
) -> int:
    """A campaign's new windows (None: unchanged): its touches' windows end anew, and the
    orders of the customers they match are classified again, in the caller's transaction;
    how many orders changed."""
    current = {CLICK: campaign.click_window_days, VIEW: campaign.view_window_days}
    wanted = {CLICK: click_days, VIEW: view_days}
    moved = {k: days for k, days in wanted.items() if days is not None and days != current[k]}
    if not moved:
        return 0
    campaign.click_window_days = moved.get(CLICK, campaign.click_window_days)
    campaign.view_window_days = moved.get(VIEW, campaign.view_window_days)
    # Only the orders between the old and the new end of a moved window can change.
    moved_touches: list[MovedTouch] = []
    spans: list[Span] = []
    for kind, days in moved.items():
        touches = move_window(
            session,
            profile_id=campaign.profile_id,
            campaign_id=campaign.campaign_id,
            kind=kind,
            days=days,
        )
        shorter, longer = sorted((current[kind], days))
        moved_touches += touches
        spans += [
            (counts_until(t.touched_at, shorter), counts_until(t.touched_at, longer))
            for t in touches
        ]
    return _reclassify_matched(session, campaign.profile_id, moved_touches, spans)


@dataclass(frozen=True)
class TouchBatch:
    """What POST .../touches did: `errors` holds each rejected touch's index and reason."""

    imported: int
    duplicates: int  # equal to a stored touch: counted, not stored again (CONTRACT §13)
    reclassified: int
    errors: list[dict[str, Any]]


def import_touch_batch(
    session: Session, *, profile_id: str, records: Sequence[object], default_click_days: int
) -> TouchBatch:
    """POST .../touches: each bad touch is rejected alone, with its index; a `kind` other
    than click or view refuses the whole request (the sender counts touches otherwise)."""
    if len(records) > MAX_TOUCHES:
        raise TooManyTouches(errors=[{"field": "touches", "message": f"at most {MAX_TOUCHES}"}])
    unknown = [
        {"field": f"touches[{index}].kind", "message": KIND_RULE}
        for index, record in enumerate(records)
        if isinstance(record, dict) and record.get("kind") is not None
        if record["kind"] not in KINDS
    ]
    if unknown:
        detail = f"{unknown[0]['field']} {KIND_RULE}"
        raise BadRequest(detail, code="invalid_field", errors=unknown[:SHOWN_KINDS])
    accepted: list[TouchRow] = []
    errors: list[dict[str, Any]] = []
    for index, record in enumerate(records):
        try:
            accepted.append(parse_touch(record))
        except RejectedTouch as rejection:
            errors.append({"index": index, "reason": str(rejection)})
    stored = store_touches(
        session, profile_id=profile_id, touches=accepted, default_click_days=default_click_days
    )
    return TouchBatch(
        imported=stored.imported,
        duplicates=stored.duplicates,
        reclassified=stored.reclassified,
        errors=errors,
    )


KEPT_REJECTIONS = 1000  # line numbers kept for the report; the count is always exact


@dataclass
class LinesImport:
    imported: int = 0
    duplicates: int = 0
    rejected: int = 0
    reclassified: int = 0
    # (line number, reason) of the first KEPT_REJECTIONS rejected lines
    rejections: list[tuple[int, str]] = field(default_factory=list)

    def reject(self, line_number: int, reason: str) -> None:
        self.rejected += 1
        if len(self.rejections) < KEPT_REJECTIONS:
            self.rejections.append((line_number, reason))


def import_touch_lines(
    session: Session,
    lines: Iterable[bytes],
    *,
    default_click_days: int,
    checkpoint: Callable[[], None] = lambda: None,
) -> LinesImport:
    """`partnerlink touches import`: JSON lines with a profileId each; `checkpoint` runs
    after each batch of lines is written (the command commits there)."""
    result = LinesImport()
    known_profiles: dict[str, bool] = {}
    batch: dict[str, list[TouchRow]] = {}
    pending = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            profile_id, touch = parse_line(raw)
            if not _profile_exists(session, profile_id, known_profiles):
                raise RejectedTouch("unknown profileId")
        except RejectedTouch as rejection:
            result.reject(number, str(rejection))
            continue
        batch.setdefault(profile_id, []).append(touch)
        pending += 1
        if pending >= LINES_PER_BATCH:
            _write_lines(session, batch, result, default_click_days)
            pending = 0
            checkpoint()
    _write_lines(session, batch, result, default_click_days)
    checkpoint()
    return result


def _write_lines(
    session: Session,
    batch: dict[str, list[TouchRow]],
    result: LinesImport,
    default_click_days: int,
) -> None:
    for profile_id, touches in batch.items():
        stored = store_touches(
            session, profile_id=profile_id, touches=touches, default_click_days=default_click_days
        )
        result.imported += stored.imported
        result.duplicates += stored.duplicates
        result.reclassified += stored.reclassified
    batch.clear()


def _profile_exists(session: Session, profile_id: str, known: dict[str, bool]) -> bool:
    if profile_id not in known:
        known[profile_id] = session.get(Profile, profile_id) is not None
    return known[profile_id]
