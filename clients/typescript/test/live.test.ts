// Both flows and every /v1 endpoint against a live `partnerlink serve`, which the Python
// suite starts (clients/typescript/tests/test_typescript_client.py) and describes in
// PARTNERLINK_TS_TEST: where it is, a partner, a signed-in merchant with a profile and a
// store with e-receipts on, pairing codes for it, and a sandbox partner whose webhooks
// come to a port this file listens on.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import { test } from "node:test";

import { InvalidSignature, PartnerLinkClient, PartnerLinkError, verifyWebhook } from "../src/index.ts";

interface Setup {
  baseUrl: string;
  connectUrl: string;
  partner: { clientId: string; clientSecret: string };
  merchant: { sessionToken: string; profileId: string; storeId: string };
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
