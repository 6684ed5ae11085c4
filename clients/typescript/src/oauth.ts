// OAuth 2.0 with PKCE (CONTRACT.md §13), as Stripe's and Square's SDKs offer it: an authorize
// URL with a fresh verifier and `state`, the callback checked before its code is used, and
// the token calls (client.oauth in index.ts). PKCE uses node:crypto's hash and random bytes,
// which every Node from 18 on has (WebCrypto's `globalThis.crypto` is a global only from 19).

import { createHash, randomBytes } from "node:crypto";

import { AuthorizationFailed } from "./errors.ts";

/** The one scope there is (the metadata's `scopes_supported`): the connected store's data. */
export const SCOPE = "store";

/** Where to send the merchant, and what to keep (the user's session) until the callback. */
export interface Authorization {
  url: string;
  state: string;
  codeVerifier: string;
  redirectUri: string;
}

export interface AuthorizeOptions {
  /** One of your registered redirect URIs (`partners update --redirect-uri`). */
  redirectUri: string;
  /** Your own `state`; a random one otherwise. */
  state?: string;
  /** `{connect_url}` when the consent screen has a host of its own (default: baseUrl + /connect). */
  connectUrl?: string;
}

export interface ExchangeOptions {
  code: string;
  codeVerifier: string;
  redirectUri: string;
}

/** RFC 7636 §4.1: 64 characters of the unreserved set, 384 random bits. */
export function newCodeVerifier(): string {
  return randomBytes(48).toString("base64url");
}

/** RFC 7636 §4.2's S256: BASE64URL(SHA-256(verifier)) without padding. */
export function codeChallenge(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

export function authorization(authorizeEndpoint: string, clientId: string, options: AuthorizeOptions): Authorization {
  const codeVerifier = newCodeVerifier();
  const state = options.state ?? randomBytes(18).toString("base64url");
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: options.redirectUri,
    scope: SCOPE,
    state,
    code_challenge: codeChallenge(codeVerifier),
    code_challenge_method: "S256",
  });
  return { url: `${authorizeEndpoint}?${query}`, state, codeVerifier, redirectUri: options.redirectUri };
}

/** The callback's code, once its `state` is the one you sent; AuthorizationFailed otherwise. */
export function codeFromCallback(callbackUrl: string, state: string): string {
  const params = new URL(callbackUrl, "http://callback.invalid").searchParams;
  if (params.get("state") !== state) {
    throw new AuthorizationFailed("state_mismatch", "the callback's state is not the one sent");
  }
  const code = params.get("code");
  if (params.has("error") || !code) {
    throw new AuthorizationFailed(params.get("error") ?? "invalid_request", params.get("error_description") ?? "");
  }
  return code;
}

/** RFC 6749 §2.3.1: id and secret each form-encoded, then `id:secret` in base64. */
export function basicCredentials(clientId: string, clientSecret: string): string {
  const pair = `${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`;
  return `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
}
