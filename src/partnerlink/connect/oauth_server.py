"""Authlib's framework-agnostic authorization server over our partners, consents and tokens.

Authlib parses and checks the protocol (RFC 6749 requests and errors, PKCE of
RFC 7636, metadata of RFC 8414; introspection and revocation are oauth_endpoints.py's,
on this server); the classes here only
answer its questions from our tables: who a client is, where a code is, what a
token is. One server is built per request around that request's session (its one
commit point), since Authlib's hooks carry no session of their own.
"""

from __future__ import annotations

import hmac
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    ClientMixin,
    InvalidGrantError,
    InvalidRequestError,
    OAuth2Request,
    grants,
)
from authlib.oauth2.rfc6749.requests import OAuth2Payload
from authlib.oauth2.rfc6749.util import extract_basic_authorization
from authlib.oauth2.rfc7636 import CodeChallenge, create_s256_code_challenge
from fastapi.responses import JSONResponse, Response
from sqlalchemy.orm import Session

from partnerlink.connect import oauth_flow
from partnerlink.connect.models import OAuthAuthorization
from partnerlink.connect.service import authenticate_client
from partnerlink.partners.models import Partner
from partnerlink.partners.service import find_partner_by_client_id
from partnerlink.problems import InvalidCredentials
from partnerlink.security.secrets import matches
from partnerlink.settings import Settings
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import find_refreshable_connection, issue_access_token

AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
GRANT_TYPES = ("authorization_code", "refresh_token")
# The one scope there is: a token reaches its one store's profile, customers and orders,
# whatever scope a request asks for (RFC 6749 §3.3 lets the server ignore what is asked).
SCOPE = "store"
SCOPES = {SCOPE: "The connected store's profile, customers and orders (every /v1 data endpoint)."}
MAX_STATE_LENGTH = 1024
# Authlib refuses plain-http URIs unless told through a process-wide variable; whether
# this service runs behind https is the deployment's choice (CONTRACT §12's HSTS), so
# requests are built against this stand-in and then carry their real address.
_TRANSPORT_CHECKED = "https://partnerlink.invalid/"


@dataclass(frozen=True)
class HttpRequest:
    """The parts of an HTTP request the OAuth endpoints read, taken from Starlette's."""

    method: str
    url: str
    headers: Any  # a case-insensitive mapping
    params: list[tuple[str, str]]  # the query (authorize) or the form body (token, introspect)


class _Payload(OAuth2Payload):
    def __init__(self, params: Iterable[tuple[str, str]]) -> None:
        self._datalist: defaultdict[str, list[str]] = defaultdict(list)
        for key, value in params:
            self._datalist[key].append(value)
        self._data = {key: values[0] for key, values in self._datalist.items()}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class _Request(OAuth2Request):
    def __init__(self, http: HttpRequest) -> None:
        super().__init__(http.method, _TRANSPORT_CHECKED, headers=http.headers)
        self.uri = http.url
        self.payload = _Payload(http.params)

    @property
    def args(self) -> dict[str, str]:
        return self.payload.data

    @property
    def form(self) -> dict[str, str]:
        return self.payload.data


class PartnerClient(ClientMixin):
    """A partner as Authlib's client: confidential, code and refresh grants, no scopes."""

    def __init__(self, partner: Partner) -> None:
        self.partner = partner

    def get_client_id(self) -> str:
        return self.partner.client_id

    def get_default_redirect_uri(self) -> str | None:
        # RFC 6749 §3.1.2.3: without redirect_uri, only a single registered one is implied.
        uris = list(self.partner.redirect_uris or [])
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return ""  # a token reaches one store's data, whatever scope is asked for

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in (self.partner.redirect_uris or [])

    def check_client_secret(self, client_secret: str) -> bool:
        return matches(client_secret, self.partner.client_secret_hash)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in AUTH_METHODS

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in GRANT_TYPES


class S256Challenge(CodeChallenge):
    """PKCE with S256 only, required on every authorization request (CONTRACT §13)."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    CODE_CHALLENGE_METHODS = {
        "S256": lambda verifier, challenge: hmac.compare_digest(
            create_s256_code_challenge(verifier).encode(), challenge.encode()
        )
    }

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge': PKCE is required.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("'code_challenge_method' must be S256.")
        state = grant.request.payload.state
        if state is not None and len(state) > MAX_STATE_LENGTH:
            raise InvalidRequestError(f"'state' is longer than {MAX_STATE_LENGTH} characters.")
        super().validate_code_challenge(grant, redirect_uri)

    def validate_code_verifier(self, grant: Any, result: Any) -> None:
        if not grant.request.form.get("code_verifier"):
            raise InvalidRequestError("Missing 'code_verifier'.")
        super().validate_code_verifier(grant, result)

    def get_authorization_code_challenge(self, authorization_code: OAuthAuthorization) -> str:
        return authorization_code.code_challenge

    def get_authorization_code_challenge_method(self, _code: OAuthAuthorization) -> str:
        return "S256"


class PartnerLinkServer(AuthorizationServer):
    def __init__(self, session: Session, settings: Settings) -> None:
        super().__init__()
        self.session = session
        self.settings = settings

    def query_client(self, client_id: str) -> PartnerClient | None:
        if not client_id or "\x00" in client_id or len(client_id) > 200:
            return None
        partner = find_partner_by_client_id(self.session, client_id)
        return PartnerClient(partner) if partner is not None and partner.active else None

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request if isinstance(request, OAuth2Request) else _Request(request)

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Any:
        return status, body, headers

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        """Nothing left to do: the generator stored the tokens while minting them."""

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No listeners."""


def _authenticated(server: PartnerLinkServer, client_id: str | None, secret: str | None) -> Any:
    """The partners' own constant-time check: an unknown id costs what a wrong secret does."""
    if not client_id or not secret:
        return None
    try:
        partner = authenticate_client(server.session, client_id=client_id, client_secret=secret)
    except InvalidCredentials:
        return None
    return PartnerClient(partner)


def _client_secret_basic(server: PartnerLinkServer) -> Any:
    def authenticate(_query_client: Any, request: OAuth2Request) -> Any:
        try:
            client_id, secret = extract_basic_authorization(request.headers)
        except ValueError:  # Basic credentials that are not UTF-8
            return None
        return _authenticated(server, client_id, secret)

    return authenticate


def _client_secret_post(server: PartnerLinkServer) -> Any:
    def authenticate(_query_client: Any, request: OAuth2Request) -> Any:
        form = request.form
        return _authenticated(server, form.get("client_id"), form.get("client_secret"))

    return authenticate


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    server: PartnerLinkServer

    def generate_authorization_code(self) -> str:
        return oauth_flow.new_code()

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        oauth_flow.save_code(
            self.server.session,
            authorization=request.user,
            code=code,
            ttl_seconds=self.server.settings.oauth_code_ttl_seconds,
        )

    def query_authorization_code(self, code: str, client: PartnerClient) -> _IssuedCode | None:
        found = oauth_flow.find_code(self.server.session, partner=client.partner, code=code)
        return _IssuedCode(found) if found is not None else None

    def delete_authorization_code(self, authorization_code: _IssuedCode) -> None:
        """Kept, marked used: a second presentation must find it to revoke what it issued."""

    def authenticate_user(self, authorization_code: _IssuedCode) -> OAuthAuthorization:
        return authorization_code.row


@dataclass(frozen=True)
class _IssuedCode:
    row: OAuthAuthorization

    @property
    def code_challenge(self) -> str:
        return self.row.code_challenge

    def get_redirect_uri(self) -> str | None:
        return self.row.redirect_uri if self.row.redirect_uri_given else None

    def get_scope(self) -> str:
        return ""


class _RefreshCredential:
    def __init__(self, session: Session, value: str) -> None:
        self.session = session
        self.value = value
        self.connection: Connection | None = None

    def check_client(self, client: PartnerClient) -> bool:
        if "\x00" in self.value:
            return False
        self.connection = find_refreshable_connection(
            self.session, refresh_token=self.value, partner_id=client.partner.id
        )
        return self.connection is not None

    def get_scope(self) -> str:
        return ""


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    server: PartnerLinkServer

    def authenticate_refresh_token(self, refresh_token: str) -> _RefreshCredential:
        return _RefreshCredential(self.server.session, refresh_token)

    def authenticate_user(self, credential: _RefreshCredential) -> _RefreshCredential:
        return credential

    def revoke_old_credential(self, credential: _RefreshCredential) -> None:
        """SPEC: a refresh token lives as long as its connection, and so do older access tokens."""


def _token_generator(server: PartnerLinkServer) -> Any:
    ttl = server.settings.access_token_ttl_seconds

    def generate(
        grant_type: str, client: PartnerClient, user: Any = None, **_: Any
    ) -> dict[str, Any]:
        if grant_type == "authorization_code":
            try:
                issued = oauth_flow.redeem_code(
                    server.session,
                    partner=client.partner,
                    authorization=user,
                    access_ttl_seconds=ttl,
                )
            except oauth_flow.CodeRefused as error:
                raise InvalidGrantError("The code was already used or has expired.") from error
            access, refresh, store_id = issued.access_token, issued.refresh_token, issued.store_id
        else:  # refresh_token: the same refresh token goes on working (SPEC)
            connection = user.connection
            access, _expires = issue_access_token(
                server.session, connection_id=connection.id, ttl_seconds=ttl
            )
            refresh, store_id = user.value, connection.store_id
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ttl,
            "refresh_token": refresh,
            "storeId": store_id,
        }

    return generate


def authorization_server(session: Session, settings: Settings) -> PartnerLinkServer:
    server = PartnerLinkServer(session, settings)
    server.register_client_auth_method("client_secret_basic", _client_secret_basic(server))
    server.register_client_auth_method("client_secret_post", _client_secret_post(server))
    server.register_grant(CodeGrant, [S256Challenge(required=True)])
    server.register_grant(RefreshGrant)
    server.register_token_generator("default", _token_generator(server))
    return server


def as_response(result: tuple[int, Any, list[tuple[str, str]]]) -> Response:
    """Authlib's (status, body, headers) as a Starlette answer.

    RFC 6749 §5.2 error bodies also carry `code` equal to `error`, so readers of
    CONTRACT §3's bodies find the word where they look for it.
    """
    status, body, headers = result
    extra = {name: value for name, value in headers if name.lower() != "content-type"}
    if isinstance(body, dict):
        if "error" in body:
            body = {**body, "code": body["error"]}
        return JSONResponse(body, status_code=status, headers=extra)
    return Response(status_code=status, headers=extra)
