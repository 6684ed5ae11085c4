"""The orders' one pipeline: built by create_app, found by the route and the fast lane.

Both ways in (the FastAPI route for refusals and the legacy `?access_token=`, the
fast lane for well-formed bearer posts) hand their orders to the same pipeline, so
they share one queue, one group commit and one database connection at a time. On
PostgreSQL, batches journaled without asking the database are appended on the event
loop itself (orders/intake/journal_append.py).
"""

from __future__ import annotations

from sqlalchemy import Engine
from starlette.applications import Starlette

from partnerlink.orders.intake.journal import OrderIntake
from partnerlink.orders.intake.journal_append import JournalAppender
from partnerlink.orders.intake.pipeline import Pipeline, pipeline_for
from partnerlink.orders.service import OrderPost
from partnerlink.settings import Settings

OrderPipeline = Pipeline[OrderPost]


def build_order_pipeline(engine: Engine, settings: Settings) -> OrderPipeline:
    intake = OrderIntake(settings)
    if engine.dialect.name != "postgresql":
        return pipeline_for(engine, intake)
    appender = JournalAppender(engine.url, intake)
    pipeline = pipeline_for(engine, intake, appender.journal)
    pipeline.on_close = appender.close
    return pipeline


def order_pipeline(app: Starlette) -> OrderPipeline:
    """The pipeline create_app keeps in the app's state."""
    pipeline: OrderPipeline = app.state.orders_pipeline
    return pipeline
