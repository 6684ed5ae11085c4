// SPEC's handling rules, against a scripted local server: what the client does with each
// status, counted on the server's side.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { PartnerLinkClient, PartnerLinkError } from "../src/index.ts";

type Reply = { status: number; body?: unknown; headers?: Record<string, string> };

let script: Reply[] = [];
let seen: { method: string; path: string; authorization: string | undefined }[] = [];
let refreshes = 0;
let baseUrl = "";
const server = createServer((request: IncomingMessage, response: ServerResponse) => {
  const url = new URL(request.url ?? "/", "http://x");
  if (url.pathname === "/v1/auth/token") {
    refreshes++;
    assert.equal(url.searchParams.get("grant_type"), "refresh_token");
    return reply(response, { status: 200, body: { accessToken: `at-${refreshes}`, expiration: "2027-01-01T00:00:00Z", success: true } });
  }
  seen.push({ method: request.method ?? "", path: url.pathname, authorization: request.headers.authorization });
  reply(response, script.shift() ?? { status: 599 });
});

function reply(response: ServerResponse, { status, body, headers }: Reply): void {
  const problem = { type: "about:blank", title: "x", status, detail: "scripted", code: `code_${status}`, success: false };
  response.writeHead(status, { "Content-Type": status < 300 ? "application/json" : "application/problem+json", ...headers });
  response.end(JSON.stringify(body ?? problem));
}

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

function client(): PartnerLinkClient {
  script = [];
  seen = [];
  refreshes = 0;
  return new PartnerLinkClient({
    baseUrl,
    clientId: "plk_ci_x",
    clientSecret: "plk_cs_x",
    accessToken: "at-0",
    refreshToken: "rt",
    retry: { attempts: 4, baseMs: 5, capMs: 20 },
  });
}

const settings = { status: 200, body: { greenInvoices: true } };

test("500 is retried with backoff until it succeeds", async () => {
  const api = client();
  script = [{ status: 500 }, { status: 500 }, settings];
  assert.deepEqual(await api.getStore(), { greenInvoices: true });
  assert.equal(seen.length, 3);
});

test("500 gives up after the policy's attempts", async () => {
  const api = client();
  script = [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }, settings];
  await assert.rejects(api.getStore(), (error: PartnerLinkError) => error.status === 500);
  assert.equal(seen.length, 4);
});

test("a Retry-After is waited for at least", async () => {
  const api = client();
  script = [{ status: 500, headers: { "Retry-After": "1" } }, settings];
  const started = Date.now();
  await api.getStore();
  assert.ok(Date.now() - started >= 950, "waited for Retry-After");
});

for (const status of [400, 404, 410]) {
  test(`${status} is never retried`, async () => {
    const api = client();
    script = [{ status }, settings];
    await assert.rejects(api.getStore(), (error: PartnerLinkError) => {
      assert.equal(error.status, status);
      assert.equal(error.code, `code_${status}`);
      return true;
    });
    assert.equal(seen.length, 1);
    assert.equal(refreshes, 0);
  });
}

test("403 refreshes the access token once, then sends again with the new one", async () => {
  const tokens: string[] = [];
  const api = client();
  (api as unknown as { onTokens: (t: { accessToken: string }) => void }).onTokens = (t) => tokens.push(t.accessToken);
  script = [{ status: 403 }, settings];
  await api.getStore();
  assert.equal(refreshes, 1);
  assert.deepEqual(seen.map((s) => s.authorization), ["Bearer at-0", "Bearer at-1"]);
  assert.deepEqual(tokens, ["at-1"]);
});

test("a second 403 throws after exactly one refresh", async () => {
  const api = client();
  script = [{ status: 403 }, { status: 403 }, settings];
  await assert.rejects(api.getStore(), (error: PartnerLinkError) => error.status === 403);
  assert.equal(refreshes, 1);
  assert.equal(seen.length, 2);
});

test("client-credential calls never refresh on 403", async () => {
  const api = client();
  script = [{ status: 403 }];
  await assert.rejects(api.createIntegrationToken(), (error: PartnerLinkError) => error.code === "code_403");
  assert.equal(refreshes, 0);
});

test("no answer at all is retried, then reported", async () => {
  const api = new PartnerLinkClient({ baseUrl: "http://127.0.0.1:9", retry: { attempts: 2, baseMs: 1, capMs: 2 } });
  await assert.rejects(api.pair(123456), (error: Error) => error.name === "ConnectionFailed");
});
