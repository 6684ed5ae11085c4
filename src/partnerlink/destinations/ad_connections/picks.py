"""The pick step's form read into a destination request (CONTRACT §14), its problems in a
store owner's words: field labels, not JSON paths; all of them at once."""

from __future__ import annotations

from typing import Any

import httpx

from partnerlink.audiences.service import DESCRIPTIONS
from partnerlink.destinations.ad_connections import lists
from partnerlink.destinations.ad_connections.errors import PlatformRefused, UnknownAccount
from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.destinations.ad_connections.service import NAMES
from partnerlink.destinations.schemas import CUSTOMER_ID
from partnerlink.problems import DomainError, ValidationFailed
from partnerlink.settings import Settings

NEW = "new"
LABELS = {
    "account": "Ad account",
    "segment": "Segment",
    "kind": "What to send",
    "audience": "Audience",
    "dataset": "Dataset",
    "managerId": "Manager account id",
    "conversionActionId": "Conversion action id",
    "target.audienceId": "Audience",
    "target.datasetId": "Dataset",
    "target.customerId": "Google Ads customer id",
    "target.userListId": "Customer list",
    "target.conversionActionId": "Conversion action id",
    "target.loginCustomerId": "Manager account id",
    "connection": "Connection",
}


def in_words(platform: str, error: DomainError) -> str:
    name = NAMES[platform]
    if isinstance(error, PlatformRefused):
        return f"{name} no longer accepts this connection: disconnect it and connect again."
    if isinstance(error, UnknownAccount):
        return (
            f"This {name} sign-in cannot use that account: pick another, or disconnect and "
            "connect again with a login that manages it."
        )
    if isinstance(error, ValidationFailed):
        return "; ".join(listed(error))
    return f"{name} could not be reached. Try again in a few minutes."


def listed(error: ValidationFailed) -> list[str]:
    return [
        f"{LABELS.get(problem['field'], problem['field'])}: {problem['message']}"
        for problem in error.errors or [{"field": "", "message": error.detail}]
    ]


def form_problems(platform: str, form: dict[str, str]) -> list[str]:
    problems = []
    account = form.get("account", "")
    if platform == "meta" and not account:
        problems.append("Ad account: pick one.")
    if platform == "google" and not CUSTOMER_ID.fullmatch(account):
        problems.append("Google Ads customer id: 10 digits, e.g. 123-456-7890.")
    manager = form.get("managerId", "")
    if manager and not CUSTOMER_ID.fullmatch(manager):
        problems.append("Manager account id: 10 digits, e.g. 123-456-7890, or leave it empty.")
    kind = form.get("kind")
    if kind not in ("audience", "conversions"):
        problems.append("What to send: an audience or sales.")
    if kind == "audience":
        if form.get("segment") not in DESCRIPTIONS:
            problems.append("Segment: pick one.")
        if not form.get("audience"):
            problems.append("Audience: pick one, or Create a new audience.")
    if kind == "conversions" and platform == "meta" and not form.get("dataset"):
        problems.append("Dataset: pick the one your sales should go to.")
    action = form.get("conversionActionId", "")
    if kind == "conversions" and platform == "google" and not action.isdigit():
        problems.append("Conversion action id: digits (Goals → Conversions, ctId).")
    return problems


def destination_body(
    settings: Settings,
    http: httpx.Client,
    connection: AdConnection,
    business: str,
    form: dict[str, str],
) -> dict[str, Any]:
    """The merchant API's Destination request; "Create a new audience" makes it first."""
    account = form["account"].replace("-", "").removeprefix("act_")
    kind = form["kind"]
    body: dict[str, Any] = {"platform": connection.platform, "kind": kind}
    body["connection"] = connection.id
    if kind == "audience":
        body["segment"] = form["segment"]
        audience = form["audience"]
        if audience != NEW:
            found = lists.audiences(settings, http, connection, account)
            _still_there(found, audience, connection)
        if audience == NEW:
            made = lists.create_audience(
                settings,
                http,
                connection,
                business,
                {"account": account, "segment": form["segment"]},
            )
            audience = made["id"]
    if connection.platform == "meta" and kind == "conversions":
        found = lists.datasets(settings, http, connection, account)
        _still_there(found, form["dataset"], connection, "dataset")
    if connection.platform == "meta":
        body["target"] = (
            {"audienceId": audience} if kind == "audience" else {"datasetId": form["dataset"]}
        )
        return body
    target = {"customerId": account}
    if form.get("managerId"):
        target["loginCustomerId"] = form["managerId"].replace("-", "")
    if kind == "audience":
        target["userListId"] = audience
    else:
        target["conversionActionId"] = form["conversionActionId"]
    body["target"] = target
    return body


def _still_there(
    found: list[dict[str, Any]], picked: str, connection: AdConnection, field: str = "audience"
) -> None:
    """A list or audience deleted on the platform since the page was drawn, or a Google
    list that holds no contact information, is refused in words."""
    if any(item["id"] == picked for item in found):
        return
    name = NAMES[connection.platform]
    what = "customer list of contact information" if connection.platform == "google" else field
    what = f"an {what}" if what[0] in "aeiou" else f"a {what}"
    message = (
        f"is no longer {what} of this account on {name} (deleted, or of another kind): "
        "pick another, or create a new one"
    )
    raise ValidationFailed(message, errors=[{"field": field, "message": message}])
