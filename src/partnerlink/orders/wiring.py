"""The orders' one pipeline: built by create_app, found by the route and the fast lane.

Both ways in (the FastAPI route for refusals and the legacy `?access_token=`, the
fast lane for well-formed bearer posts) hand their orders to the same pipeline, so
they share one queue, one group commit and one database connection at a time.
"""

from __future__ import annotations

from functools import partial

from sqlalchemy import Engine
from starlette.applications import Starlette

from partnerlink.orders.journal import take_orders
from partnerlink.orders.pipeline import Pipeline, pipeline_for
from partnerlink.orders.service import OrderPost
from partnerlink.settings import Settings

OrderPipeline = Pipeline[OrderPost]


def build_order_pipeline(engine: Engine, settings: Settings) -> OrderPipeline:
    return pipeline_for(engine, partial(take_orders, settings=settings))


def order_pipeline(app: Starlette) -> OrderPipeline:
    """The pipeline create_app keeps in the app's state."""
    pipeline: OrderPipeline = app.state.orders_pipeline
    return pipeline
