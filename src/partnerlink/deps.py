"""Request-scoped dependencies shared by every domain: the session and the settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from partnerlink.settings import Settings


def get_session(request: Request) -> Iterator[Session]:
    """The one commit point of a request.

    Scope "function" makes the commit happen before the response is sent, so a
    client never sees 200 for something that was then rolled back. A raised
    error rolls everything back: a refused request stores nothing.
    """
    session: Session = request.app.state.sessionmaker()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
