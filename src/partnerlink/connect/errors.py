"""The consent-screen flow's refusals (CONTRACT §3 codes)."""

from __future__ import annotations

from partnerlink.problems import BadRequest, Gone, InvalidToken, NotFound, ValidationFailed


class MissingField(BadRequest):
    code = "missing_field"
    detail = "client_id is required"


class InvalidGrantType(BadRequest):
    code = "invalid_grant_type"
    detail = "grant_type must be refresh_token."


class NotFinished(BadRequest):
    code = "not_finished"
    detail = "The integration is not finished: the merchant has not approved it yet."


class UnknownIntegrationToken(NotFound):
    code = "unknown_integration_token"
    detail = "Unknown integration token."


class UnknownClient(NotFound):
    code = "unknown_client"
    detail = "Unknown client id."


class AlreadyExchanged(Gone):
    code = "already_exchanged"
    detail = "The integration token was already exchanged; run the connection flow again."


class IntegrationTokenGone(Gone):
    code = "integration_token_gone"
    detail = "The integration token expired, was cancelled or was already used."


class UnknownRefreshToken(InvalidToken):
    detail = "The refresh token is unknown, or the integration's access was revoked."


class OAuthConsentElsewhere(ValidationFailed):
    """An OAuth request's consent, approved where no code can be issued (the merchant API):
    its store would be nobody's, so nothing is stored."""

    detail = (
        "This consent answers an OAuth authorization request: the merchant approves it on"
        " its authorize page, which returns them to the partner with a code."
    )

    def __init__(self) -> None:
        super().__init__(
            errors=[
                {"field": "integrationToken", "message": "approved on its OAuth authorize page"}
            ]
        )
