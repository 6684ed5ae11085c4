// Checking a webhook before trusting it (CONTRACT.md §9 and §13). Two signatures travel
// with every event; either proves it:
// - `PartnerLink-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`: HMAC-SHA256 keyed with the
//   whole secret string (`whsec_` included) as UTF-8, over "<t>.<raw body>";
// - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>
//   [v1,<base64>]`: HMAC-SHA256 keyed with the bytes the secret's base64 part (after
//   `whsec_`) decodes to, over "<id>.<timestamp>.<raw body>".
// Several signatures are sent while a secret is being rotated; any one that matches will do.

import { createHmac, timingSafeEqual } from "node:crypto";

import { InvalidSignature } from "./errors.ts";

export interface WebhookEvent {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown>;
}

export type Headers = Record<string, string | string[] | undefined> | globalThis.Headers;

function header(headers: Headers, name: string): string | null {
  if (typeof (headers as globalThis.Headers).get === "function") {
    return (headers as globalThis.Headers).get(name);
  }
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() === wanted) {
      return Array.isArray(value) ? String(value[0]) : value == null ? null : String(value);
    }
  }
  return null;
}

function sameBytes(expected: Buffer, candidate: Buffer): boolean {
  return expected.length === candidate.length && timingSafeEqual(expected, candidate);
}

function checkAge(timestamp: string, toleranceSeconds: number, now: number): void {
  if (!/^\d+$/.test(timestamp)) throw new InvalidSignature("malformed signature timestamp");
  if (Math.abs(now - Number(timestamp)) > toleranceSeconds) {
    throw new InvalidSignature("signature timestamp outside the tolerance");
  }
}

function partnerLinkSignature(secret: string, body: Buffer, value: string, now: number, tolerance: number): boolean {
  let timestamp: string | null = null;
  const candidates: string[] = [];
  for (const item of value.split(",")) {
    const [name, ...rest] = item.trim().split("=");
    if (name === "t") timestamp = rest.join("=");
    else if (name === "v1") candidates.push(rest.join("="));
  }
  if (timestamp === null || candidates.length === 0) {
    throw new InvalidSignature("malformed PartnerLink-Signature header");
  }
  checkAge(timestamp, tolerance, now);
  const expected = createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(`${timestamp}.`)
    .update(body)
    .digest();
  return candidates.some((hex) => /^[0-9a-f]+$/i.test(hex) && sameBytes(expected, Buffer.from(hex, "hex")));
}

function standardSignature(
  secret: string,
  body: Buffer,
  id: string,
  timestamp: string,
  value: string,
  now: number,
  tolerance: number,
): boolean {
  checkAge(timestamp, tolerance, now);
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  return value
    .split(" ")
    .map((part) => part.split(","))
    .some(([version, signature]) => version === "v1" && signature !== undefined && sameBytes(expected, Buffer.from(signature, "base64")));
}

/**
 * The event, once its headers prove that `body` (the raw bytes received) was signed with
 * `secret` less than `toleranceSeconds` ago; throws InvalidSignature otherwise.
 */
export function verifyWebhook(
  secret: string,
  body: string | Uint8Array,
  headers: Headers,
  options: { toleranceSeconds?: number; now?: number } = {},
): WebhookEvent {
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  const now = options.now ?? Date.now() / 1000;
  const tolerance = options.toleranceSeconds ?? 300;
  const standard = header(headers, "webhook-signature");
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const ours = header(headers, "partnerlink-signature");
  let valid = false;
  if (standard !== null && id !== null && timestamp !== null) {
    valid = standardSignature(secret, raw, id, timestamp, standard, now, tolerance);
  } else if (ours !== null) {
    valid = partnerLinkSignature(secret, raw, ours, now, tolerance);
  } else {
    throw new InvalidSignature("no signature header");
  }
  if (!valid) throw new InvalidSignature("signature does not match");
  return JSON.parse(raw.toString("utf8")) as WebhookEvent;
}
