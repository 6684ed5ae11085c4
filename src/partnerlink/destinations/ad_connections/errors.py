"""What a platform's sign-in or list call may answer, in a store owner's words.

No message holds a token, a code or the app's secret: each is ours, chosen by what
happened, never the platform's text.
"""

from __future__ import annotations

from partnerlink.problems import DomainError, NotFound


class UnknownConnection(NotFound):
    detail = "No such ad connection in this profile."


class PlatformRefused(DomainError):
    """The platform refused the connection's token: the merchant signs in again."""

    status = 409
    code = "reconnect"
    detail = "The platform no longer accepts this connection: disconnect and connect again."


class PlatformUnavailable(DomainError):
    status = 502
    code = "platform_unavailable"
    detail = "The ad platform could not be reached or answered in a way we do not know: try again in a few minutes."


class NotConfigured(DomainError):
    status = 404
    code = "not_configured"
    detail = "This service has no app registered for that platform (see docs/ad-platforms.md)."


class UnknownAccount(DomainError):
    status = 400
    code = "invalid_field"
    detail = "account: this connection cannot use that ad account (pick one from the list)."

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(
            detail,
            errors=[
                {"field": "account", "message": "is not an ad account this connection can use"}
            ],
        )
