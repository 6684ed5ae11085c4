// The PartnerLink partner API (/v1) for TypeScript and JavaScript. Every request and
// answer shape comes from src/schema.d.ts, generated from the server's /openapi.json
// (`make typescript-client`); calls go through openapi-fetch, so a path, a parameter or
// a field the API does not have is a type error. The client adds what SPEC asks of every
// integration: refresh once on 403, retry 500 with backoff and jitter, never retry
// 400/404/410, and keep the tokens it is given (handed to `onTokens` to persist). OAuth 2.0
// with PKCE is `client.oauth` (oauth.ts). Published compiled (dist/, tsc), for Node 18 on.

import createClient from "openapi-fetch";

import { ConnectionFailed, PartnerLinkError, type Problem } from "./errors.ts";
import {
  authorization,
  basicCredentials,
  codeFromCallback,
  type Authorization,
  type AuthorizeOptions,
  type ExchangeOptions,
} from "./oauth.ts";
import { RetryPolicy, retryAfterSeconds, type RetryOptions } from "./policy.ts";
import type { components, paths } from "./schema.js";

export {
  AuthorizationFailed,
  ConnectionFailed,
  InvalidSignature,
  PartnerLinkError,
  type Problem,
} from "./errors.ts";
export {
  codeChallenge,
  newCodeVerifier,
  SCOPE,
  type Authorization,
  type AuthorizeOptions,
  type ExchangeOptions,
} from "./oauth.ts";
export { RetryPolicy, type RetryOptions } from "./policy.ts";
export { verifyWebhook, type WebhookEvent } from "./webhooks.ts";
export type { components, paths, webhooks } from "./schema.js";

type Schemas = components["schemas"];
export type Order = Schemas["OrderIn"];
export type StoreProfile = Schemas["StoreProfileIn"];
export type Store = Schemas["StoreOut"];
export type UploadStatus = Schemas["UploadStatusOut"];
export type TokenStatus = Schemas["TokenStatusOut"];
export type Connection = Schemas["ConnectionOut"];
export type Delivery = Schemas["DeliveryOut"];
export type Introspection = Schemas["OAuthIntrospection"];
type TokenForm = paths["/v1/oauth/token"]["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"];
type RevokeForm = paths["/v1/oauth/revoke"]["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"];
/** A list's page: at most `limit` items (1–1,000, default 100) after `cursor`. */
export type Page = { limit?: number; cursor?: string };
export type BatchResult =
  paths["/v1/orders/batch"]["post"]["responses"][200]["content"]["application/json"]["results"][number];
export type CustomerRecord = {
  email?: string;
  phoneNumber?: string;
  firstName?: string;
  lastName?: string;
  city?: string;
  countryCode?: string;
  [field: string]: unknown;
};

/** The tokens a flow hands over; keep them like passwords. */
export interface Tokens {
  accessToken: string;
  refreshToken?: string;
  expiration?: string;
  storeId?: string;
  ereceipt?: boolean;
}

export interface ClientOptions {
  /** `{base_url}` without `/v1`, e.g. `https://api.example.com`. */
  baseUrl: string;
  /** Backend only: never ship a client secret in a device or a browser. */
  clientId?: string;
  clientSecret?: string;
  accessToken?: string;
  refreshToken?: string;
  /** Called with every new token the client is given (pairing, exchange, refresh). */
  onTokens?: (tokens: Tokens) => void;
  retry?: RetryOptions;
  fetch?: typeof fetch;
}

/**
 * `client.oauth`: OAuth 2.0's authorization code flow with PKCE, as Stripe's `stripe.oauth`
 * and Square's `OAuthApi`. The token calls authenticate with HTTP Basic and keep the tokens
 * they get (handed to `onTokens`); refusals throw PartnerLinkError with RFC 6749's word as
 * `code` (`invalid_grant`, `invalid_client`, ...).
 */
export interface OAuthHelpers {
  /** An authorize URL with a fresh PKCE verifier (S256) and `state`: keep both. */
  authorizeUrl(options: AuthorizeOptions): Authorization;
  /** The callback's code once its `state` is yours; throws AuthorizationFailed otherwise. */
  codeFromCallback(callbackUrl: string, state: string): string;
  /** Sent once, never retried: a code presented twice revokes what it bought. */
  exchangeCode(options: ExchangeOptions): Promise<Tokens>;
  /** A new access token (the refresh token stays the same). */
  refresh(refreshToken?: string): Promise<Tokens>;
  /** RFC 7009: the token's whole connection ends; an unknown or dead token is no error. */
  revoke(token?: string, tokenTypeHint?: RevokeForm["token_type_hint"]): Promise<void>;
  /** RFC 7662: what a token of yours is; `{ active: false }` for any other. */
  introspect(token: string): Promise<Introspection>;
}

type Credential = "none" | "client" | "bearer";
type Answer<T> = { data?: T; error?: unknown; response: Response };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class PartnerLinkClient {
  readonly baseUrl: string;
  accessToken: string | undefined;
  refreshToken: string | undefined;
  private readonly clientId: string | undefined;
  private readonly clientSecret: string | undefined;
  private readonly onTokens: ((tokens: Tokens) => void) | undefined;
  private readonly policy: RetryPolicy;
  private readonly fetcher: typeof fetch;
  private readonly api: ReturnType<typeof createClient<paths>>;

  readonly oauth: OAuthHelpers = {
    authorizeUrl: (options) => {
      const connect = (options.connectUrl ?? `${this.baseUrl}/connect`).replace(/\/+$/, "");
      return authorization(`${connect}/oauth/authorize`, this.clientId ?? "", options);
    },
    codeFromCallback,
    exchangeCode: ({ code, codeVerifier, redirectUri }) =>
      this.oauthToken(
        { grant_type: "authorization_code", code, code_verifier: codeVerifier, redirect_uri: redirectUri },
        false,
      ),
    refresh: (refreshToken = this.refreshToken) => {
      if (!refreshToken) return Promise.reject(new Error("no refresh token to refresh with"));
      return this.oauthToken({ grant_type: "refresh_token", refresh_token: refreshToken }, true);
    },
    revoke: async (token = this.accessToken, tokenTypeHint) => {
      const body: RevokeForm = { token: token ?? "", ...(tokenTypeHint ? { token_type_hint: tokenTypeHint } : {}) };
      await this.send("none", () => this.api.POST("/v1/oauth/revoke", { body, ...this.form() }));
    },
    introspect: (token) =>
      this.send("none", () => this.api.POST("/v1/oauth/introspect", { body: { token }, ...this.form() })),
  };

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.clientId = options.clientId;
    this.clientSecret = options.clientSecret;
    this.accessToken = options.accessToken;
    this.refreshToken = options.refreshToken;
    this.onTokens = options.onTokens;
    this.policy = new RetryPolicy(options.retry);
    this.fetcher = options.fetch ?? globalThis.fetch;
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (request) => this.fetcher(request) });
  }

  // ---- the consent-screen flow (backend: client credentials) ----

  /** 1. A pending integration token; then send the merchant to `consentUrl(...)`. */
  async createIntegrationToken(): Promise<string> {
    const body = await this.send("client", (auth) =>
      this.api.POST("/v1/auth/integration", { params: { query: auth.client() } }),
    );
    return body.integrationToken;
  }

  /** Where the merchant approves: open it in a browser window or an IFrame. */
  consentUrl(connectUrl: string, integrationToken: string): string {
    const query = new URLSearchParams({ client_id: this.clientId ?? "", integration_token: integrationToken });
    return `${connectUrl.replace(/\/+$/, "")}/?${query}`;
  }

  /** 2. `pending`, `finished` or `cancelled`; poll every few seconds. */
  async integrationStatus(integrationToken: string): Promise<string> {
    const body = await this.send("client", (auth) =>
      this.api.GET("/v1/auth/integration", {
        params: { query: { ...auth.client(), integration_token: integrationToken } },
      }),
    );
    return body.status;
  }

  /** 3. Once `finished`: the access and refresh tokens (kept by the client). */
  async exchangeIntegrationToken(integrationToken: string): Promise<Tokens> {
    const body = await this.send("client", (auth) =>
      this.api.GET("/v1/auth/integration/token", {
        params: { query: { ...auth.client(), integration_token: integrationToken } },
      }),
    );
    return this.keep({
      accessToken: body.accessToken,
      refreshToken: body.refreshToken,
      expiration: body.expiration,
      ereceipt: body.ereceipt,
    });
  }

  /** 4. A new access token from the refresh token (done by itself on a 403). */
  async refresh(): Promise<Tokens> {
    const refreshToken = this.refreshToken;
    if (!refreshToken) throw new Error("no refresh token to refresh with");
    const body = await this.send("client", (auth) =>
      this.api.POST("/v1/auth/token", {
        params: { query: { ...auth.client(), code: refreshToken, grant_type: "refresh_token" } },
      }),
    );
    return this.keep({ accessToken: body.accessToken, refreshToken, expiration: body.expiration });
  }

  /** Revokes the whole connection of an access or refresh token (RFC 7009). */
  async revoke(token: string): Promise<void> {
    await this.send("client", (auth) =>
      this.api.POST("/v1/auth/revoke", { params: { query: { ...auth.client(), token } } }),
    );
  }

  /** One page of the partner's live connections; pass `nextCursor` back for the next. */
  async connectionsPage(page: Page = {}): Promise<Schemas["ConnectionList"]> {
    return this.send("client", (auth) =>
      this.api.GET("/v1/connections", { params: { query: { ...auth.client(), ...page } } }),
    );
  }

  /** Every live connection, page after page. */
  async connections(): Promise<Connection[]> {
    return this.all((page) => this.connectionsPage(page), (body) => body.connections);
  }

  /** One page of this partner's webhook deliveries (oldest first). */
  async webhookDeliveriesPage(page: Page = {}): Promise<Schemas["DeliveryList"]> {
    return this.send("client", (auth) =>
      this.api.GET("/v1/webhooks/deliveries", { params: { query: { ...auth.client(), ...page } } }),
    );
  }

  /** Every webhook delivery of this partner, page after page. */
  async webhookDeliveries(): Promise<Delivery[]> {
    return this.all((page) => this.webhookDeliveriesPage(page), (body) => body.deliveries);
  }

  /** Sends one of this partner's events again, now (another partner's: 404). */
  async replayWebhook(eventId: string): Promise<string> {
    const body = await this.send("client", (auth) =>
      this.api.POST("/v1/webhooks/deliveries/{eventId}/replay", {
        params: { path: { eventId }, query: auth.client() },
      }),
    );
    return body.eventId;
  }

  private async all<P extends { nextCursor?: string | null }, T>(
    fetchPage: (page: Page) => Promise<P>,
    items: (body: P) => T[],
  ): Promise<T[]> {
    const found: T[] = [];
    let cursor: string | undefined;
    do {
      const body = await fetchPage({ limit: 1000, ...(cursor ? { cursor } : {}) });
      found.push(...items(body));
      cursor = body.nextCursor ?? undefined;
    } while (cursor);
    return found;
  }

  private async oauthToken(body: TokenForm, retry: boolean): Promise<Tokens> {
    const answer = await this.send("none", () => this.api.POST("/v1/oauth/token", { body, ...this.form() }), retry);
    return this.keep({
      accessToken: answer.access_token,
      refreshToken: answer.refresh_token,
      expiration: new Date(Date.now() + answer.expires_in * 1000).toISOString(),
      storeId: answer.storeId,
    });
  }

  /** The OAuth endpoints' request: a form body, the client's credentials as HTTP Basic. */
  private form() {
    return {
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: basicCredentials(this.clientId ?? "", this.clientSecret ?? ""),
      },
      bodySerializer: (body: Record<string, string>) => new URLSearchParams(body).toString(),
    };
  }

  // ---- the pairing-code flow (a terminal: no client secret) ----

  /** 5. Redeems the merchant's 6-digit code: a durable access token for the store. */
  async pair(code: number): Promise<Tokens> {
    const body = await this.send("none", () =>
      this.api.POST("/v1/auth/integration/pair", { body: { code } }),
    );
    return this.keep({ accessToken: body.access_token, storeId: body.storeId });
  }

  // ---- data endpoints (the store access token) ----

  async tokenStatus(): Promise<TokenStatus> {
    return this.send("bearer", (auth) => this.api.GET("/v1/auth/token/status", { headers: auth.bearer() }));
  }

  /** 6. Creates or updates the store profile. */
  async putStore(profile: StoreProfile): Promise<Store> {
    const body = await this.send("bearer", (auth) =>
      this.api.PUT("/v1/stores", { body: profile, headers: auth.bearer() }),
    );
    return body.store;
  }

  /** 7. The store's settings: `greenInvoices` says whether to offer e-receipts. */
  async getStore(): Promise<Schemas["StoreSettingsOut"]> {
    return this.send("bearer", (auth) => this.api.GET("/v1/stores", { headers: auth.bearer() }));
  }

  /** 8. A pre-signed URL for one customer file. */
  async uploadUrl(): Promise<string> {
    const body = await this.send("bearer", (auth) => this.api.GET("/v1/customers", { headers: auth.bearer() }));
    return body.uploadUrl;
  }

  /** Sends the customer list to a pre-signed URL; answers the upload's id. */
  async uploadCustomers(url: string, records: CustomerRecord[] | string): Promise<string> {
    const payload = typeof records === "string" ? records : JSON.stringify(records);
    const body = await this.send("none", async () => {
      const response = await this.fetcher(url, {
        method: "PUT",
        headers: { "Content-Type": "application/json" },
        body: payload,
      });
      return { response, data: response.ok ? await response.json() : undefined };
    });
    return (body as { uploadId: string }).uploadId;
  }

  /** Where an upload's ingestion stands: `received`, `processing`, `done` or `failed`. */
  async uploadStatus(uploadId: string): Promise<UploadStatus> {
    return this.send("bearer", (auth) =>
      this.api.GET("/v1/customers/uploads/{uploadId}", {
        params: { path: { uploadId } },
        headers: auth.bearer(),
      }),
    );
  }

  /** 9. Sends (or updates) one order; safe to retry: orders are keyed by `orderId`. */
  async sendOrder(order: Order): Promise<void> {
    await this.send("bearer", (auth) => this.api.POST("/v1/orders", { body: order, headers: auth.bearer() }));
  }

  /** Up to 1,000 orders in one call; each is applied or refused on its own. */
  async sendOrders(orders: Order[]): Promise<BatchResult[]> {
    const body = await this.send("bearer", (auth) =>
      this.api.POST("/v1/orders/batch", { body: { orders }, headers: auth.bearer() }),
    );
    return body.results;
  }

  /** 10. An order as the receipt page shows it (gated by e-receipts). */
  async getOrder(orderId: string): Promise<Record<string, unknown>> {
    return this.send("bearer", (auth) =>
      this.api.GET("/v1/orders", { params: { query: { orderId } }, headers: auth.bearer() }),
    ) as Promise<Record<string, unknown>>;
  }

  // ---- sandbox (a sandbox partner's client credentials) ----

  async sandboxPairingCode(): Promise<Schemas["SandboxCode"]> {
    return this.send("client", (auth) =>
      this.api.POST("/v1/sandbox/pairing-codes", { params: { query: auth.client() } }),
    );
  }

  async sandboxWebhook(type: string): Promise<string> {
    const body = await this.send("client", (auth) =>
      this.api.POST("/v1/sandbox/webhooks", { params: { query: { ...auth.client(), type } } }),
    );
    return body.eventId;
  }

  // ---- SPEC's handling rules, for every call ----

  private keep(tokens: Tokens): Tokens {
    this.accessToken = tokens.accessToken;
    if (tokens.refreshToken) this.refreshToken = tokens.refreshToken;
    this.onTokens?.(tokens);
    return tokens;
  }

  private credentials() {
    return {
      client: () => ({ client_id: this.clientId ?? "", client_secret: this.clientSecret ?? "" }),
      bearer: () => ({ Authorization: `Bearer ${this.accessToken ?? ""}` }),
    };
  }

  /** `retry` false: sent once whatever happens (a code's exchange must not be repeated). */
  private async send<T>(
    credential: Credential,
    call: (auth: ReturnType<PartnerLinkClient["credentials"]>) => Promise<Answer<T>>,
    retry = true,
  ): Promise<T> {
    const canRefresh = credential === "bearer" && Boolean(this.refreshToken && this.clientId);
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      let answer: Answer<T> | null = null;
      let failure: unknown = null;
      try {
        answer = await call(this.credentials());
      } catch (error) {
        failure = error;
      }
      const status = answer ? answer.response.status : null;
      const retryAfter = answer ? retryAfterSeconds(answer.response.headers.get("Retry-After")) : null;
      const step = this.policy.nextStep(status, attempt, canRefresh, refreshed);
      switch (step === "retry" && !retry ? "raise" : step) {
        case "done":
          return answer!.data as T;
        case "refresh":
          refreshed = true;
          await this.refresh();
          attempt--; // the refresh is not a retry of this call
          continue;
        case "retry":
          await sleep(this.policy.delayMs(attempt, retryAfter));
          continue;
        case "raise":
          if (!answer) throw new ConnectionFailed(`no answer from ${this.baseUrl}`, { cause: failure });
          throw new PartnerLinkError(answer.response.status, problemOf(answer.error), retryAfter);
      }
    }
  }
}

function problemOf(error: unknown): Partial<Problem> {
  return typeof error === "object" && error !== null ? (error as Partial<Problem>) : {};
}
