"""create_app(): every domain's router, middleware, error handlers and the /v1 rule."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from partnerlink import __version__, ops
from partnerlink.apidocs import install_api_docs
from partnerlink.audiences import merchant_api as audiences_merchant_api
from partnerlink.audiences import sms_replies
from partnerlink.audiences import web as audiences_web
from partnerlink.connect import api as connect_api
from partnerlink.connect import merchant_api as consent_merchant_api
from partnerlink.connect import oauth_api, oauth_web, platform_api
from partnerlink.connect import web as connect_web
from partnerlink.console import web as console_web
from partnerlink.console.app import console_mount, create_console_app
from partnerlink.customers import api as customers_api
from partnerlink.customers import merchant_api as customers_merchant_api
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.destinations import merchant_api as destinations_merchant_api
from partnerlink.destinations import web as destinations_web
from partnerlink.destinations.ad_connections import callbacks as ad_connections_callbacks
from partnerlink.destinations.ad_connections import merchant_api as ad_connections_api
from partnerlink.destinations.ad_connections import web as ad_connections_web
from partnerlink.kit.process import tune_garbage_collector
from partnerlink.measurement import merchant_api as measurement_merchant_api
from partnerlink.measurement import web as measurement_web
from partnerlink.merchant import merchant_api
from partnerlink.middleware import BodySizeLimit, Metrics, SecurityHeaders
from partnerlink.orders import api as orders_api
from partnerlink.orders import merchant_api as orders_merchant_api
from partnerlink.orders import web as orders_web
from partnerlink.orders.deps import SETTLED_ORDERS
from partnerlink.orders.intake.fast_lane import OrdersFastLane
from partnerlink.orders.intake.wiring import build_order_pipeline
from partnerlink.pairing import api as pairing_api
from partnerlink.pairing import merchant_api as pairing_merchant_api
from partnerlink.problems import (
    CLOSE_CONNECTION,
    DomainError,
    InternalError,
    problem_from,
    problem_response,
)
from partnerlink.receipts import twilio_callbacks
from partnerlink.sandbox import api as sandbox_api
from partnerlink.security.redaction import install_log_redaction
from partnerlink.settings import SERVER_PROCESS_ENV, Settings, get_settings
from partnerlink.stores import api as stores_api
from partnerlink.tokens.quota import PartnerQuotaLimit
from partnerlink.validation import problem_from_validation_error
from partnerlink.web.negotiation import prefers_html
from partnerlink.webhooks import api as webhooks_api
from partnerlink.webhooks import reference as webhooks_reference
from partnerlink.worker import BackgroundWorker

log = logging.getLogger("partnerlink")

# Paths served by a part of the application other than the partner API; a 404
# there is a real "not found". Anything else outside /v1 answers 403 (SPEC.md).
_MOUNTED_PREFIXES = (
    "/v1/",
    "/connect",
    "/receipts",
    "/merchant",
    "/docs",
    "/redoc",
    "/openapi.json",
    "/healthz",
    "/readyz",
    "/metrics",
    "/static",
)
UPLOAD_PATH_PREFIX = "/v1/uploads/"
TOUCHES_MAX_BYTES = 8 * 1024 * 1024


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    install_log_redaction()
    engine = make_engine(settings.database_url)
    read_engine = make_engine(settings.database_read_url) if settings.database_read_url else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if os.environ.get(SERVER_PROCESS_ENV):
            tune_garbage_collector()
        worker = None
        if settings.run_worker:
            worker = BackgroundWorker(app.state.sessionmaker, settings)
            worker.start()
        try:
            yield
        finally:
            if worker is not None:
                worker.stop()
            await app.state.orders_pipeline.close()
            engine.dispose()
            if read_engine is not None:
                read_engine.dispose()

    # The API references (their tags in SPEC.md's order, whatever order the routers are
    # matched in) and Swagger UI's assets are set up by apidocs.install_api_docs.
    app = FastAPI(
        title="PartnerLink partner API",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    # The replica's, when there is one (deps.ReadSessionDep); else reads share the request's
    # own session, so that SQLite's single connection is never asked for twice.
    app.state.read_engine = read_engine or engine
    app.state.read_sessionmaker = make_sessionmaker(read_engine) if read_engine else None
    # Orders reach the database through one pipeline, whichever way they come in
    # (the route or the fast lane): orders/intake/wiring.py.
    app.state.orders_pipeline = build_order_pipeline(engine, settings)

    _include_routers(app)
    _install_error_handlers(app)
    install_api_docs(app, oauth_scheme=oauth_api.security_scheme(settings))

    static_dir = Path(__file__).parent / "static"
    app.mount("/static", StaticFiles(directory=static_dir), name="static")

    # Each one added wraps those before it: metrics see everything, the body limit sees only
    # real requests, and the orders' fast lane (innermost) works inside all three.
    app.add_middleware(OrdersFastLane)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        exempt_prefixes=(UPLOAD_PATH_PREFIX,),
        # 10,000 touches with both hashes (~200 bytes each) exceed the default 1 MiB.
        larger_suffixes=(("/touches", TOUCHES_MAX_BYTES),),
    )
    # Around the body limit and the fast lane, so that their answers carry RateLimit too.
    app.add_middleware(PartnerQuotaLimit, settings=settings)
    app.add_middleware(SecurityHeaders, https=settings.public_url.lower().startswith("https://"))
    app.add_middleware(Metrics, request_log=settings.log_format == "json")
    return app


def _include_routers(app: FastAPI) -> None:
    # Routes that read what an applied order writes (orders, customers, receipts, a store's
    # profile) first apply the orders acknowledged into the journal before the request
    # (orders/deps.py); the others do without: the connection and token flows, upload URLs,
    # the sandbox, webhook deliveries, Twilio's delivery statuses, health and metrics.
    settled = [SETTLED_ORDERS]
    # The hottest route is matched first (a request tries the routers in order; measured:
    # bench/README.md); the API reference keeps SPEC.md's order by its tags (create_app).
    # GET /v1/orders declares the barrier itself: the POST beside it takes none.
    app.include_router(orders_api.router, prefix="/v1")
    for router in (connect_api.router, platform_api.router, oauth_api.router, pairing_api.router):
        app.include_router(router, prefix="/v1")
    # A store's profile is also written by the store snapshot an order carries.
    app.include_router(stores_api.router, prefix="/v1", dependencies=settled)
    # Upload URLs and statuses; the sandbox's test stores and events; webhook deliveries.
    for router in (customers_api.router, sandbox_api.router, webhooks_api.router):
        app.include_router(router, prefix="/v1")
    # The webhook events: in the partner API's document (its `webhooks`), never served.
    app.webhooks.include_router(webhooks_reference.router)
    for router in (
        merchant_api.router,
        consent_merchant_api.router,
        pairing_merchant_api.router,
        customers_merchant_api.router,
        orders_merchant_api.router,
        audiences_merchant_api.router,
        measurement_merchant_api.router,
        destinations_merchant_api.router,
        ad_connections_api.router,
    ):
        # In the merchant API's own reference (apidocs), not the partner one.
        app.include_router(router, prefix="/merchant/api", dependencies=settled)
    # The consent pages list the merchant's stores; the receipt page shows an order.
    for router in (connect_web.router, oauth_web.router, orders_web.router):
        app.include_router(router, include_in_schema=False, dependencies=settled)
    # RFC 8414's fixed address: an exception to the 403 outside /v1 (CONTRACT §13).
    app.include_router(oauth_api.metadata_router)
    # Twilio's callbacks, signed by Twilio: a delivery status (of a receipt sent, so of an
    # order applied), and STOP/START, which opts out the customers an order may have made.
    app.include_router(twilio_callbacks.router)
    app.include_router(sms_replies.router, dependencies=settled)
    app.include_router(ops.router)
    # The console's pages, with those of measurement and audiences, as one application of
    # its own at /merchant, with its own HTML error pages (console/app.py).
    console = create_console_app(
        app.state,
        console_web.router,
        measurement_web.router,
        audiences_web.router,
        destinations_web.router,
        ad_connections_callbacks.router,
        ad_connections_web.router,
        dependencies=settled,
    )
    app.router.routes.append(console_mount(console))


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain_error(_request: Request, error: DomainError) -> JSONResponse:
        return problem_from(error)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return problem_from_validation_error(error, request.headers.get("content-type"))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> Any:
        if error.status_code == 404:
            path = request.url.path
            if path.startswith(_MOUNTED_PREFIXES):
                return problem_response(404, "not_found", "No such resource.")
            # A person who opens the bare address goes to the console (whose sign-in page
            # links the API reference); programs keep the 403 below.
            browser = prefers_html(request.headers.get("accept", ""))
            if path == "/" and request.method in ("GET", "HEAD") and browser:
                return RedirectResponse("/merchant", status_code=303)
            return problem_response(
                403,
                "missing_version_prefix",
                "Partner API paths start with /v1 (for example /v1/auth/integration). "
                "The merchant console is at /merchant.",
            )
        if error.status_code == 405:
            return problem_response(405, "method_not_allowed", "Method not allowed on this path.")
        detail = error.detail if isinstance(error.detail, str) else "Request refused."
        if error.status_code == 400:
            # Starlette's own refusals: a body that is not decodable JSON at all.
            return problem_response(
                400,
                "malformed_request",
                "The request body is not valid JSON.",
                errors=[{"field": "body", "message": "not valid JSON"}],
            )
        return problem_response(
            error.status_code, "http_error", detail, headers=dict(error.headers or {})
        )

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error: %s", type(error).__name__)
        return problem_from(InternalError(headers=CLOSE_CONNECTION))
