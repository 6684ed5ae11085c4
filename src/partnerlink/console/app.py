"""The merchant console as an application of its own, mounted at `/merchant` by create_app.

Like a back office mounted beside an API, it has its own routes (its pages and
the measurement and audiences pages, which live with their domains), its own
signed-in dependency (merchant/pages.py) and its own error handlers, which answer
HTML pages rather than the APIs' problem+json. It shares the main app's state
(settings, engine, sessions) and sits inside the main app's middleware (security
headers and framing rules, metrics, body limits).

The merchant JSON API (`/merchant/api`) is not part of it: those routes, their
404s and 405s stay with the main app and answer JSON.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fastapi import APIRouter, FastAPI, Request, Response, params
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import State
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount, get_route_path
from starlette.types import Scope

from partnerlink.merchant.pages import HOME_PATH, ConsoleError, refusal_page
from partnerlink.problems import CLOSE_CONNECTION

log = logging.getLogger("partnerlink.console")

MERCHANT_API_PREFIX = f"{HOME_PATH}/api"


def create_console_app(
    state: State, *routers: APIRouter, dependencies: Sequence[params.Depends] = ()
) -> FastAPI:
    """The console application, with `routers` (paths relative to `/merchant`), each of
    their routes depending on `dependencies` first."""
    console = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    console.state = state  # one set of settings, engine and sessions with the main app
    for router in routers:
        console.include_router(router, dependencies=dependencies)
    _install_error_pages(console)
    return console


def console_mount(console: FastAPI) -> Mount:
    return ConsoleMount(HOME_PATH, app=console)


class ConsoleMount(Mount):
    """`/merchant` and below, but for the merchant JSON API.

    `/merchant` itself is the console's home page (a plain Mount would redirect it
    to `/merchant/`).
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        route_path = get_route_path(scope)
        if route_path == MERCHANT_API_PREFIX or route_path.startswith(f"{MERCHANT_API_PREFIX}/"):
            return Match.NONE, {}
        if route_path == self.path:
            match, child_scope = super().matches({**scope, "path": f"{scope['path']}/"})
            return match, {**child_scope, "path": f"{scope['path']}/"}
        return super().matches(scope)


def _install_error_pages(console: FastAPI) -> None:
    @console.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> Response:
        return refusal_page(request, error.status_code, dict(error.headers or {}))

    @console.exception_handler(RequestValidationError)
    async def _invalid(request: Request, _error: RequestValidationError) -> Response:
        return refusal_page(request, 400)

    @console.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> Response:
        log.exception("unexpected error on a console page: %s", type(error).__name__)
        page = ConsoleError(
            500, "Something went wrong", "Nothing was changed. Try again in a moment."
        ).response(request)
        page.headers.update(CLOSE_CONNECTION)  # as the API's (problems.py says why)
        return page
