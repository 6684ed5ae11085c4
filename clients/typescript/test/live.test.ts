// Both flows and every /v1 endpoint against a live `partnerlink serve`, which the Python
// suite starts (clients/typescript/tests/test_typescript_client.py) and describes in
// PARTNERLINK_TS_TEST: where it is, a partner (with a registered OAuth redirect URI), a
// signed-in merchant with a profile and a store with e-receipts on, pairing codes for it,
// and a sandbox partner whose webhooks come to a port this file listens on. The merchant's
// side of OAuth is the real consent pages, read and posted here as a browser would.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import { test } from "node:test";

import {
  AuthorizationFailed,
  InvalidSignature,
  PartnerLinkClient,
  PartnerLinkError,
  verifyWebhook,
} from "../src/index.ts";

interface Setup {
  baseUrl: string;
  connectUrl: string;
  partner: { clientId: string; clientSecret: string };
  redirectUri: string;
  merchant: { email: string; password: string; sessionToken: string; profileId: string; storeId: string };
  pairingCodes: number[];
  sandbox: { clientId: string; clientSecret: string; webhookSecret: string; webhookPort: number };
}

const setup: Setup | null = process.env.PARTNERLINK_TS_TEST ? JSON.parse(process.env.PARTNERLINK_TS_TEST) : null;
const live = { skip: setup ? false : "PARTNERLINK_TS_TEST is not set: run through `make test`" };
const retry = { attempts: 4, baseMs: 50, capMs: 500 };

function order(orderId: string, extra: Record<string, unknown> = {}) {
  return {
    orderId,
    orderPrice: "2400",
    orderCurrency: "USD",
    createdAt: new Date().toISOString(),
    customerPhoneNumber: "+14155550123",
    customerEmail: "ada@example.com",
    orderDetails: {
      orderStatus: "CLOSED",
      orderItems: [{ itemId: "1", itemName: "Flat white", itemPrice: "2400", itemQuantity: 1 }],
    },
    ...extra,
  };
}

test("pairing flow: pair, store profile, orders, receipt order, customers", live, async () => {
  const s = setup!;
  const terminal = new PartnerLinkClient({ baseUrl: s.baseUrl, retry });
  const tokens = await terminal.pair(s.pairingCodes[0]!);
  assert.match(tokens.accessToken, /^plk_at_/);
  assert.equal(tokens.storeId, s.merchant.storeId);

  const store = await terminal.putStore({ storeName: "TS Bistro", storeAddress: "1 Main Street", storeCountryCode: "US" });
  assert.equal(store.name, "TS Bistro");
  assert.deepEqual(await terminal.getStore(), { greenInvoices: true });
  const status = await terminal.tokenStatus();
  assert.equal(status.method, "pairing");

  await terminal.sendOrder(order("TS-1"));
  const stored = await terminal.getOrder("TS-1");
  assert.equal(stored.orderId, "TS-1");
  assert.equal(stored.orderPrice, "2400");

  const results = await terminal.sendOrders([order("TS-2"), { ...order("TS-3"), orderCurrency: "" }]);
  assert.deepEqual(results.map((r) => [r.orderId, r.status]), [["TS-2", 200], ["TS-3", 400]]);

  await assert.rejects(terminal.getOrder("no-such-order"), (error: PartnerLinkError) => {
    assert.equal(error.status, 404);
    assert.equal(error.code, "not_found");
    return true;
  });
  await assert.rejects(
    terminal.sendOrder({ ...order("TS-4"), orderPrice: "12.00" }),
    (error: PartnerLinkError) => error.status === 400 && error.problem.errors?.[0]?.field === "orderPrice",
  );

  const url = await terminal.uploadUrl();
  const uploadId = await terminal.uploadCustomers(url, [
    { email: "grace@example.com", firstName: "Grace" },
    { phoneNumber: "+14155550199" },
    { firstName: "nobody" },
  ]);
  let upload = await terminal.uploadStatus(uploadId);
  for (let i = 0; i < 300 && upload.status !== "done" && upload.status !== "failed"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    upload = await terminal.uploadStatus(uploadId);
  }
  assert.equal(upload.status, "done");
  assert.equal(upload.records, 3);
  assert.equal(upload.rejected, 1);
});

test("consent flow: token, merchant approves, exchange, refresh, revoke", live, async () => {
  const s = setup!;
  const backend = new PartnerLinkClient({ baseUrl: s.baseUrl, ...s.partner, retry });
  const integrationToken = await backend.createIntegrationToken();
  assert.equal(await backend.integrationStatus(integrationToken), "pending");
  assert.ok(backend.consentUrl(s.connectUrl, integrationToken).startsWith(`${s.connectUrl}/?client_id=`));

  // What the merchant does on the consent screen, through the merchant API.
  const approved = await fetch(`${s.baseUrl}/merchant/api/consents/${integrationToken}/approve`, {
    method: "POST",
    headers: { Authorization: `Bearer ${s.merchant.sessionToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ clientId: s.partner.clientId, profileId: s.merchant.profileId, greenInvoices: false }),
  });
  assert.equal(approved.status, 200, await approved.clone().text());
  assert.equal(await backend.integrationStatus(integrationToken), "finished");

  const kept: string[] = [];
  const partner = new PartnerLinkClient({ baseUrl: s.baseUrl, ...s.partner, retry, onTokens: (t) => kept.push(t.accessToken) });
  const tokens = await partner.exchangeIntegrationToken(integrationToken);
  assert.ok(tokens.refreshToken && tokens.expiration);
  await assert.rejects(partner.exchangeIntegrationToken(integrationToken), (error: PartnerLinkError) => error.status === 410);

  await partner.putStore({ storeName: "TS Consent", storeAddress: "2 Main Street", storeCountryCode: "US" });
  const refreshed = await partner.refresh();
  assert.notEqual(refreshed.accessToken, tokens.accessToken);
  assert.equal((await partner.tokenStatus()).method, "consent");
  assert.ok((await partner.connections()).length >= 1);
  assert.deepEqual(kept, [tokens.accessToken, refreshed.accessToken]);

  await partner.revoke(tokens.refreshToken!);
  // The access token is dead; the one refresh the rules allow fails too: 403, thrown.
  await assert.rejects(partner.getStore(), (error: PartnerLinkError) => error.status === 403);
});

test("webhooks: a sandbox event arrives and verifies; a tampered one does not", live, async () => {
  const s = setup!;
  const arrived = new Promise<{ body: Buffer; headers: IncomingMessage["headers"] }>((resolve) => {
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        response.writeHead(204).end();
        receiver.close();
        resolve({ body: Buffer.concat(chunks), headers: request.headers });
      });
    });
    receiver.listen(s.sandbox.webhookPort, "127.0.0.1");
  });
  const sandbox = new PartnerLinkClient({ baseUrl: s.baseUrl, clientId: s.sandbox.clientId, clientSecret: s.sandbox.clientSecret, retry });
  const eventId = await sandbox.sandboxWebhook("store.settings.updated");
  const { body, headers } = await arrived;
  const event = verifyWebhook(s.sandbox.webhookSecret, body, headers as Record<string, string>);
  assert.equal(event.id, eventId);
  assert.ok(headers["webhook-signature"], "Standard Webhooks headers travel with the event");
  // The Standard Webhooks signature alone verifies it too.
  const { "partnerlink-signature": _ours, ...standardOnly } = headers as Record<string, string>;
  assert.equal(verifyWebhook(s.sandbox.webhookSecret, body, standardOnly).id, eventId);
  assert.equal(event.type, "store.settings.updated");
  const tampered = Buffer.from(body.toString().replace("store.settings", "store.settinGs"));
  assert.throws(() => verifyWebhook(s.sandbox.webhookSecret, tampered, headers as Record<string, string>), InvalidSignature);
  assert.throws(() => verifyWebhook("whsec_d3Jvbmcgc2VjcmV0IG9mIDI0IGJ5dGVzISE=", body, headers as Record<string, string>), InvalidSignature);

  // The partner sees its delivery and replays it: it arrives again.
  let delivered = (await sandbox.webhookDeliveries()).find((d) => d.eventId === eventId);
  for (let i = 0; i < 100 && delivered?.status !== "delivered"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    delivered = (await sandbox.webhookDeliveries()).find((d) => d.eventId === eventId);
  }
  assert.equal(delivered?.status, "delivered");
  const again = new Promise<string>((resolve) => {
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        response.writeHead(204).end();
        receiver.close();
        resolve(verifyWebhook(s.sandbox.webhookSecret, Buffer.concat(chunks), request.headers as Record<string, string>).id);
      });
    });
    receiver.listen(s.sandbox.webhookPort, "127.0.0.1");
  });
  assert.equal(await sandbox.replayWebhook(eventId), eventId);
  assert.equal(await again, eventId);
  await assert.rejects(sandbox.replayWebhook("evt_unknown"), (error: PartnerLinkError) => error.status === 404);
});

/** The merchant in a browser: opens the authorize URL, signs in, allows; the redirect back. */
async function merchantApproves(s: Setup, authorizeUrl: string): Promise<string> {
  const hidden = (html: string, action: string): Record<string, string> => {
    const form = html.split("<form").find((part) => part.includes(`action="${action}"`));
    assert.ok(form, `a form posting to ${action}`);
    const fields: Record<string, string> = {};
    for (const [, name, value] of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      fields[name!] = value!.replaceAll("&#34;", '"').replaceAll("&#39;", "'").replaceAll("&amp;", "&");
    }
    return fields;
  };
  const post = (path: string, fields: Record<string, string>) =>
    fetch(`${s.baseUrl}${path}`, { method: "POST", body: new URLSearchParams(fields), redirect: "manual" });
  const signin = hidden(await (await fetch(authorizeUrl)).text(), "/connect/signin");
  const signedIn = await post("/connect/signin", { ...signin, email: s.merchant.email, password: s.merchant.password });
  const approve = hidden(await signedIn.text(), "/connect/approve");
  const approved = await post("/connect/approve", { ...approve, target: `profile:${s.merchant.profileId}` });
  assert.equal(approved.status, 302);
  return approved.headers.get("location")!;
}

test("oauth: authorize URL with PKCE, the merchant allows, exchange, refresh, revoke", live, async () => {
  const s = setup!;
  const kept: string[] = [];
  const partner = new PartnerLinkClient({ baseUrl: s.baseUrl, ...s.partner, retry, onTokens: (t) => kept.push(t.accessToken) });
  const started = partner.oauth.authorizeUrl({ redirectUri: s.redirectUri });
  assert.ok(started.url.startsWith(`${s.connectUrl}/oauth/authorize?`));
  assert.notEqual(partner.oauth.authorizeUrl({ redirectUri: s.redirectUri }).codeVerifier, started.codeVerifier);
  const callback = await merchantApproves(s, started.url);
  assert.ok(callback.startsWith(`${s.redirectUri}?`));
  assert.throws(() => partner.oauth.codeFromCallback(callback, "not-the-state-sent"), AuthorizationFailed);
  const code = partner.oauth.codeFromCallback(callback, started.state);
  const tokens = await partner.oauth.exchangeCode({ code, codeVerifier: started.codeVerifier, redirectUri: started.redirectUri });
  assert.match(tokens.accessToken, /^plk_at_/);
  assert.ok(tokens.refreshToken && tokens.storeId && tokens.expiration! > new Date().toISOString());
  assert.equal((await partner.tokenStatus()).method, "consent");
  const seen = await partner.oauth.introspect(tokens.refreshToken);
  assert.equal(seen.active, true);
  assert.equal(seen.token_type, undefined); // RFC 7662: a refresh token has no RFC 6749 type
  const refreshed = await partner.oauth.refresh();
  assert.notEqual(refreshed.accessToken, tokens.accessToken);
  assert.equal(refreshed.refreshToken, tokens.refreshToken);
  assert.deepEqual(kept, [tokens.accessToken, refreshed.accessToken]);

  await partner.oauth.revoke("plk_rt_unknown"); // RFC 7009: nothing to revoke is no error
  await partner.oauth.revoke(tokens.refreshToken, "refresh_token");
  await assert.rejects(partner.oauth.refresh(), (error: PartnerLinkError) => error.status === 400 && error.code === "invalid_grant");
  await assert.rejects(partner.getStore(), (error: PartnerLinkError) => error.status === 403);

  // A code works once: presented again, it is refused and what it bought is revoked.
  const again = partner.oauth.authorizeUrl({ redirectUri: s.redirectUri, state: "my-own-state" });
  const exchange = {
    code: partner.oauth.codeFromCallback(await merchantApproves(s, again.url), "my-own-state"),
    codeVerifier: again.codeVerifier,
    redirectUri: again.redirectUri,
  };
  await partner.oauth.exchangeCode(exchange);
  await assert.rejects(partner.oauth.exchangeCode(exchange), (error: PartnerLinkError) => error.code === "invalid_grant");
  await assert.rejects(partner.getStore(), (error: PartnerLinkError) => error.status === 403);
  const stranger = new PartnerLinkClient({ baseUrl: s.baseUrl, clientId: s.partner.clientId, clientSecret: "plk_cs_wrong", retry });
  await assert.rejects(stranger.oauth.revoke("plk_at_x"), (error: PartnerLinkError) => error.status === 401 && error.code === "invalid_client");
});
