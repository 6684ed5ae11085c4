"""The clients: `PartnerLinkClient` (sync) and `AsyncPartnerLinkClient` (async).

Both run the same calls (calls.py) under the same rules (policy.py); only the sending
differs. Tokens from pairing, the token exchange and refresh are kept by the client
and handed to `on_tokens`, so an integration can persist them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from partnerlink_client import calls
from partnerlink_client.calls import Call, Tokens
from partnerlink_client.errors import ConnectionFailed, PartnerLinkError, error_for
from partnerlink_client.oauth import OAuth, basic_credentials
from partnerlink_client.policy import Next, RetryPolicy

TokensCallback = Callable[[Tokens], None]


class _State:
    """What both clients share: where, who, the tokens, and how one call is built."""

    def __init__(
        self,
        base_url: str,
        *,
        client_id: str | None,
        client_secret: str | None,
        access_token: str | None,
        refresh_token: str | None,
        on_tokens: TokensCallback | None,
        policy: RetryPolicy | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client_id = client_id
        self.client_secret = client_secret
        self.access_token = access_token
        self.refresh_token = refresh_token
        self.on_tokens = on_tokens
        self.policy = policy or RetryPolicy()

    def request(self, call: Call) -> httpx.Request:
        params = dict(call.params)
        headers = {"Accept": "application/json"}
        if call.auth == "client":
            params.update(client_id=self.client_id or "", client_secret=self.client_secret or "")
        elif call.auth == "bearer":
            headers["Authorization"] = f"Bearer {self.access_token or ''}"
        elif call.auth == "basic":
            headers["Authorization"] = basic_credentials(
                self.client_id or "", self.client_secret or ""
            )
        if call.content is not None:
            headers["Content-Type"] = "application/json"
        return httpx.Request(
            call.method,
            call.url or self.base_url + call.path,
            params=params,
            headers=headers,
            json=call.json,
            content=call.content,
            data=call.form,
        )

    def can_refresh(self, call: Call) -> bool:
        return call.auth == "bearer" and bool(self.refresh_token and self.client_id)

    def outcome(self, call: Call, response: httpx.Response) -> Any:
        body = _json(response)
        if not 200 <= response.status_code < 300:
            raise error_for(response.status_code, body, _retry_after(response))
        if call.tokens is not None:
            # Read once: the tokens kept (and handed to on_tokens) are the ones answered,
            # expiration and all (read twice, an OAuth expiry computed from expires_in
            # could differ by a millisecond between the two).
            tokens = call.tokens(body)
            self.keep(tokens)
            return tokens
        return call.read(body)

    def keep(self, tokens: Tokens) -> None:
        self.access_token = tokens.access_token
        if tokens.refresh_token:
            self.refresh_token = tokens.refresh_token
        if self.on_tokens:
            self.on_tokens(tokens)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return {}


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None


class _Endpoints:
    """Every /v1 endpoint, once, for both clients: each returns what `_run` returns (an
    answer, or an awaitable of it)."""

    _state: _State

    def _run(self, call: Call) -> Any:
        raise NotImplementedError

    @property
    def oauth(self) -> OAuth:
        """OAuth 2.0 with PKCE: `authorize_url`, `code_from_callback`, `exchange_code`,
        `refresh`, `revoke` (oauth.py)."""
        return OAuth(self)

    @property
    def base_url(self) -> str:
        return self._state.base_url

    # Consent-screen flow
    def create_integration_token(self) -> Any:
        return self._run(calls.create_integration_token())

    def consent_url(self, integration_token: str, connect_url: str | None = None) -> str:
        connect = connect_url or self._state.base_url + "/connect"
        return calls.consent_url(connect, self._state.client_id or "", integration_token)

    def integration_status(self, integration_token: str) -> Any:
        return self._run(calls.integration_status(integration_token))

    def exchange_integration_token(self, integration_token: str) -> Any:
        return self._run(calls.exchange_integration_token(integration_token))

    def refresh(self) -> Any:
        return self._run(calls.refresh(self._state.refresh_token or ""))

    # Pairing-code flow
    def pair(self, code: int | str) -> Any:
        return self._run(calls.pair(code))

    # Partner platform
    def revoke(self, token: str | None = None) -> Any:
        return self._run(calls.revoke(token or self._state.access_token or ""))

    def token_status(self) -> Any:
        return self._run(calls.token_status())

    def connections_page(self, limit: int | None = None, cursor: str | None = None) -> Any:
        return self._run(calls.connections(limit, cursor))

    def webhook_deliveries(self, limit: int | None = None, cursor: str | None = None) -> Any:
        return self._run(calls.webhook_deliveries(limit, cursor))

    def replay_webhook(self, event_id: str) -> Any:
        return self._run(calls.replay_webhook(event_id))

    # Data
    def put_store(self, profile: dict[str, Any]) -> Any:
        return self._run(calls.put_store(profile))

    def get_store(self) -> Any:
        return self._run(calls.get_store())

    def upload_url(self) -> Any:
        return self._run(calls.upload_url())

    def put_upload(self, url: str, records: Iterable[dict[str, Any]] | bytes) -> Any:
        return self._run(calls.put_upload(url, records))

    def upload_status(self, upload_id: str) -> Any:
        return self._run(calls.upload_status(upload_id))

    def send_order(self, order: dict[str, Any]) -> Any:
        return self._run(calls.send_order(order))

    def send_orders(self, orders: list[dict[str, Any]]) -> Any:
        return self._run(calls.send_orders(orders))

    def get_order(self, order_id: str) -> Any:
        return self._run(calls.get_order(order_id))

    # Sandbox
    def sandbox_pairing_code(self) -> Any:
        return self._run(calls.sandbox_pairing_code())

    def sandbox_webhook(self, event_type: str) -> Any:
        return self._run(calls.sandbox_webhook(event_type))


class PartnerLinkClient(_Endpoints):
    """Synchronous client. `upload_customers` asks for a URL and PUTs the records to it."""

    def __init__(
        self,
        base_url: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        access_token: str | None = None,
        refresh_token: str | None = None,
        on_tokens: TokensCallback | None = None,
        policy: RetryPolicy | None = None,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._state = _State(
            base_url,
            client_id=client_id,
            client_secret=client_secret,
            access_token=access_token,
            refresh_token=refresh_token,
            on_tokens=on_tokens,
            policy=policy,
        )
        self._http = http or httpx.Client(timeout=30)
        self._sleep = sleep

    @property
    def access_token(self) -> str | None:
        return self._state.access_token

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PartnerLinkClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def upload_customers(self, records: Iterable[dict[str, Any]] | bytes) -> str:
        return str(self.put_upload(self.upload_url(), records))

    def connections(self, page_size: int | None = None) -> list[dict[str, Any]]:
        """Every live connection of the partner, following `nextCursor` page by page."""
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.connections_page(page_size, cursor)
            found += page["connections"]
            if not (cursor := page.get("nextCursor")):
                return found

    def _run(self, call: Call) -> Any:
        state, attempt, refreshed = self._state, 0, False
        while True:
            attempt += 1
            try:
                response: httpx.Response | None = self._http.send(state.request(call))
            except httpx.TransportError:
                response = None
            status = None if response is None else response.status_code
            step = state.policy.next_step(
                status, attempt=attempt, can_refresh=state.can_refresh(call), refreshed=refreshed
            )
            if step is Next.REFRESH:
                refreshed = True
                self.refresh()
                continue
            if step is Next.RETRY and call.retry:
                self._sleep(
                    state.policy.delay(attempt, _retry_after(response) if response else None)
                )
                continue
            if response is None:
                raise ConnectionFailed(0, {"code": "no_answer", "detail": "no answer"})
            return state.outcome(call, response)


class AsyncPartnerLinkClient(_Endpoints):
    """Asynchronous client: the same methods, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        access_token: str | None = None,
        refresh_token: str | None = None,
        on_tokens: TokensCallback | None = None,
        policy: RetryPolicy | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._state = _State(
            base_url,
            client_id=client_id,
            client_secret=client_secret,
            access_token=access_token,
            refresh_token=refresh_token,
            on_tokens=on_tokens,
            policy=policy,
        )
        self._http = http or httpx.AsyncClient(timeout=30)

    @property
    def access_token(self) -> str | None:
        return self._state.access_token

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncPartnerLinkClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def upload_customers(self, records: Iterable[dict[str, Any]] | bytes) -> str:
        return str(await self.put_upload(await self.upload_url(), records))

    async def connections(self, page_size: int | None = None) -> list[dict[str, Any]]:
        """Every live connection of the partner, following `nextCursor` page by page."""
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await self.connections_page(page_size, cursor)
            found += page["connections"]
            if not (cursor := page.get("nextCursor")):
                return found

    async def _run(self, call: Call) -> Any:
        state, attempt, refreshed = self._state, 0, False
        while True:
            attempt += 1
            try:
                response: httpx.Response | None = await self._http.send(state.request(call))
            except httpx.TransportError:
                response = None
            status = None if response is None else response.status_code
            step = state.policy.next_step(
                status, attempt=attempt, can_refresh=state.can_refresh(call), refreshed=refreshed
            )
            if step is Next.REFRESH:
                refreshed = True
                await self.refresh()
                continue
            if step is Next.RETRY and call.retry:
                wait = _retry_after(response) if response else None
                await asyncio.sleep(state.policy.delay(attempt, wait))
                continue
            if response is None:
                raise ConnectionFailed(0, {"code": "no_answer", "detail": "no answer"})
            return state.outcome(call, response)


__all__ = ["AsyncPartnerLinkClient", "PartnerLinkClient", "PartnerLinkError", "Tokens"]
