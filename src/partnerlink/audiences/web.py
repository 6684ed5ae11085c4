"""Console pages of audiences: segment sizes with their exports, opt-out and erasure.

Same conventions as the rest of the console (console/): the session cookie's
merchant, a CSRF token on every form, a redirect after every change; an erasure
asks for confirmation first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from sqlalchemy.orm import Session

from partnerlink.audiences import queries
from partnerlink.audiences.choices import erase, opt_in, opt_out
from partnerlink.audiences.schemas import download
from partnerlink.audiences.service import DESCRIPTIONS, digest_key, plan_export
from partnerlink.audiences.stored_sizes import listed
from partnerlink.merchant.ownership import owned_profile
from partnerlink.merchant.pages import (
    ConsoleForm,
    ConsoleRoute,
    ConsoleUser,
    SignedIn,
    console_page,
)
from partnerlink.problems import ValidationFailed
from partnerlink.web.routing import PageSessionDep

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)

PAGE = "audiences/audiences.html"
# Chosen by key after a redirect, so no text of the URL reaches the page.
DONE = {
    "opted-out": "Done: whoever matched will not be exported again.",
    "opted-in": "Done: your opt-out is lifted (a customer's own STOP stays until they reply START).",
    "erased": "Erased: their details are gone and their orders count as anonymous.",
    "nobody": "Nobody in this business matched; nothing was changed.",
}

# The console's names of the segments. The API's names stay (CONTRACT §8), but "new" there
# means a first order within 30 days, while on the Results page a new customer is one an ad
# brought: the page names this segment so that the two cannot be taken for each other.
LABELS = {
    "all": "All customers",
    "buyers": "Buyers",
    "new": f"First-time buyers (last {queries.NEW_DAYS} days)",
    "repeat": "Repeat buyers",
    "lapsed": "Lapsed buyers",
    "top": "Top spenders",
}


def _path(profile_id: str) -> str:
    return f"/merchant/profiles/{profile_id}/audiences"


def _key(request: Request) -> bytes:
    return digest_key(request.app.state.settings.signing_key)


def _context(
    request: Request, session: Session, merchant_id: str, profile_id: str
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant_id, profile_id=profile_id)
    found = listed(session, session, profile_id=profile.id, settings=request.app.state.settings)
    segments = [
        {**a, "label": LABELS[str(a["segment"])], "description": DESCRIPTIONS[str(a["segment"])]}
        for a in found.audiences
    ]
    return {
        "profile": profile,
        "segments": segments,
        "counted_at": found.computed_at,
        "form": {},
        "errors": {},
    }


@router.get("/profiles/{profile_id}/audiences")
def audiences_page(
    request: Request, session: PageSessionDep, user: ConsoleUser, profile_id: str
) -> HTMLResponse:
    context = _context(request, session, user.merchant.id, profile_id)
    done = DONE.get(request.query_params.get("done", ""))
    return console_page(request, user, PAGE, {**context, "notice": done})


@router.get("/profiles/{profile_id}/audiences/{segment}/export")
def export_file(
    request: Request,
    session: PageSessionDep,
    user: ConsoleUser,
    profile_id: str,
    segment: str,
    format: str = "",
) -> StreamingResponse:
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    plan = plan_export(
        session,
        profile_id=profile.id,
        segment=segment,
        file_format=format,
        digest_key=_key(request),
    )
    return download(request, plan)


def _refused(
    request: Request,
    session: Session,
    user: SignedIn,
    profile_id: str,
    error: ValidationFailed,
    form: dict[str, str],
) -> HTMLResponse:
    session.rollback()
    context = _context(request, session, user.merchant.id, profile_id)
    message = "Enter an email address or a phone number."
    if error.code != "missing_field":
        message = "Check the email address or phone number: it cannot be matched as written."
    context.update(form=form, errors={form["action"]: message})
    return console_page(request, user, PAGE, context, status_code=400)


@dataclass(frozen=True)
class PersonForm:
    """Whom an opt-out or an erasure is for, as the merchant typed it."""

    email: str
    phone: str

    def echoed(self, action: str) -> dict[str, str]:
        return {"action": action, "email": self.email, "phone": self.phone}


def person_form(email: str = Form(""), phone: str = Form("")) -> PersonForm:
    return PersonForm(email, phone)


Person = Annotated[PersonForm, Depends(person_form)]
# What each form carries out, and the notice for "someone matched".
CHOICES: dict[str, tuple[Callable[..., int], str]] = {
    "opt-out": (opt_out, "opted-out"),
    "opt-in": (opt_in, "opted-in"),
    "erase": (erase, "erased"),
}


def _carry_out(
    request: Request,
    session: Session,
    user: SignedIn,
    profile_id: str,
    person: PersonForm,
    action: str,
) -> Response:
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    choice, matched = CHOICES[action]
    # Erasure keeps keyed digests of the identifiers (CONTRACT §12).
    keyed = {"digest_key": _key(request)} if action == "erase" else {}
    try:
        count = choice(
            session, profile_id=profile.id, email=person.email, phone=person.phone, **keyed
        )
    except ValidationFailed as error:
        return _refused(request, session, user, profile_id, error, person.echoed(action))
    done = matched if count else "nobody"
    return RedirectResponse(f"{_path(profile.id)}?done={done}", status_code=303)


@router.post("/profiles/{profile_id}/audiences/opt-out")
def opt_out_form(
    request: Request, session: PageSessionDep, user: ConsoleForm, profile_id: str, person: Person
) -> Response:
    return _carry_out(request, session, user, profile_id, person, "opt-out")


@router.post("/profiles/{profile_id}/audiences/opt-in")
def opt_in_form(
    request: Request, session: PageSessionDep, user: ConsoleForm, profile_id: str, person: Person
) -> Response:
    """Lifts the merchant's own opt-out (CONTRACT §12)."""
    return _carry_out(request, session, user, profile_id, person, "opt-in")


@router.post("/profiles/{profile_id}/audiences/erase/confirm")
def confirm_erasure(
    request: Request, session: PageSessionDep, user: ConsoleForm, profile_id: str, person: Person
) -> HTMLResponse:
    """The confirmation step: nothing is changed until the merchant confirms."""
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    if not person.email.strip() and not person.phone.strip():
        error = ValidationFailed(code="missing_field")
        return _refused(request, session, user, profile_id, error, person.echoed("erase"))
    context = {"profile": profile, "email": person.email.strip(), "phone": person.phone.strip()}
    return console_page(request, user, "audiences/confirm_erase.html", context)


@router.post("/profiles/{profile_id}/audiences/erase")
def erase_form(
    request: Request, session: PageSessionDep, user: ConsoleForm, profile_id: str, person: Person
) -> Response:
    return _carry_out(request, session, user, profile_id, person, "erase")
