import type { components } from "./schema.js";

/** CONTRACT.md §3's problem body, as every non-2xx answer of /v1 carries it. */
export type Problem = components["schemas"]["Problem"];

/** A refused call: the HTTP status, the problem's stable `code`, and the whole body. */
export class PartnerLinkError extends Error {
  readonly status: number;
  readonly code: string;
  readonly problem: Partial<Problem>;
  readonly retryAfterSeconds: number | null;

  constructor(status: number, problem: Partial<Problem>, retryAfterSeconds: number | null) {
    // RFC 6749's errors (the OAuth endpoints) say it in `error_description`.
    const detail = problem.detail ?? (problem as { error_description?: string }).error_description;
    super(`${status} ${problem.code ?? "error"}: ${detail ?? problem.title ?? ""}`.trim());
    this.name = "PartnerLinkError";
    this.status = status;
    this.code = problem.code ?? "error";
    this.problem = problem;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** No answer at all, after every retry. */
export class ConnectionFailed extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConnectionFailed";
  }
}

/** A webhook that was not signed with the secret, or is too old. */
export class InvalidSignature extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidSignature";
  }
}

/**
 * The OAuth callback brought no code for you: the merchant declined (`access_denied`), the
 * request was refused, or its `state` is not the one you sent (`state_mismatch`: forged or
 * stale). `error` is RFC 6749's word.
 */
export class AuthorizationFailed extends Error {
  readonly error: string;
  readonly description: string;

  constructor(error: string, description = "") {
    super(description ? `${error}: ${description}` : error);
    this.name = "AuthorizationFailed";
    this.error = error;
    this.description = description;
  }
}
