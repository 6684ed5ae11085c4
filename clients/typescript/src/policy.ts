// SPEC's handling rules, as the Python client has them (clients/python/.../policy.py):
// - 2xx: done;
// - 403 on a call made with the access token, while a refresh token is at hand and not
//   yet used for this call: refresh once, then send again; a second 403 throws;
// - 500, or no answer at all: retry with exponential backoff and full jitter (never
//   sooner than a Retry-After), up to `attempts` tries in all; then throw;
// - 400, 404, 410 (and anything else): throw at once, never retried.

export type Next = "done" | "refresh" | "retry" | "raise";

export interface RetryOptions {
  /** Tries in all, the first included (default 4). */
  attempts?: number;
  /** The first retry waits up to this long (default 500 ms); each next one doubles it. */
  baseMs?: number;
  /** No wait is longer than this (default 8 s), unless a Retry-After asks for more. */
  capMs?: number;
}

export class RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly capMs: number;

  constructor(options: RetryOptions = {}) {
    this.attempts = options.attempts ?? 4;
    this.baseMs = options.baseMs ?? 500;
    this.capMs = options.capMs ?? 8000;
  }

  /** `status` null: no answer (a connection error). `attempt` counts from 1. */
  nextStep(
    status: number | null,
    attempt: number,
    canRefresh: boolean,
    refreshed: boolean,
  ): Next {
    if (status !== null && status >= 200 && status < 300) return "done";
    if (status === 403 && canRefresh && !refreshed) return "refresh";
    if ((status === null || status === 500) && attempt < this.attempts) return "retry";
    return "raise";
  }

  /** Full jitter: a random wait up to base * 2^(attempt-1), capped; at least Retry-After. */
  delayMs(attempt: number, retryAfterSeconds: number | null = null): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** (attempt - 1));
    return Math.max(Math.random() * ceiling, (retryAfterSeconds ?? 0) * 1000);
  }
}

/** Seconds from a Retry-After header (seconds, or an HTTP date); null when absent. */
export function retryAfterSeconds(header: string | null): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, (date - Date.now()) / 1000);
}
