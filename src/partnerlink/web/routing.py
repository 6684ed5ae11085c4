"""Page routes: a page error raised anywhere below a route becomes its HTML page.

The app's own handlers answer problem+json, which suits the APIs but not a
browser; page routers use `PageRoute`, and raise `PageException` subclasses
that know how to render themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from partnerlink.deps import SessionDep
from partnerlink.problems import DomainError


class PageException(Exception):
    """Ends a page request with the response it renders; nothing of the request is stored."""

    def response(self, request: Request) -> Response:
        raise NotImplementedError


def page_session(request: Request, session: SessionDep) -> Session:
    # Kept where PageRoute can find it: a rendered page error must still roll back.
    request.state.page_session = session
    return session


PageSessionDep = Annotated[Session, Depends(page_session)]


class PageRoute(APIRoute):
    """A route whose errors are pages; subclasses say how an unexpected refusal looks."""

    def refusal_page(self, request: Request, status_code: int) -> Response:
        raise NotImplementedError

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except PageException as shown:
                await _roll_back(request)
                return shown.response(request)
            except DomainError as error:
                # A refusal no page foresaw (odd input): still a page, never a JSON body.
                await _roll_back(request)
                return self.refusal_page(request, error.status)
            except RequestValidationError:
                await _roll_back(request)
                return self.refusal_page(request, 400)

        return handle


async def _roll_back(request: Request) -> None:
    # The session dependency commits when the route returns normally, which it
    # now does: undo whatever the refused request wrote first.
    session: Session | None = getattr(request.state, "page_session", None)
    if session is not None:
        await run_in_threadpool(session.rollback)
