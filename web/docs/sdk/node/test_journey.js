// The getting-started journey with emi.js against a live server, and its
// retry logic against a local server. Run by `make test`
// (TestSDKsRunTheGettingStartedJourneyAgainstALiveServer in web/docs):
//
//   EMI_URL=... EMI_API_KEY=... EMI_API_SECRET=... node test_journey.js
//
// The EMI_WEBHOOK_* variables carry a delivery signed by emi's deliverer;
// without them the webhook step signs its own. Every step asserts; the
// first failure exits non-zero.
"use strict";

const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const http = require("node:http");
const path = require("node:path");
const emi = require(path.join(__dirname, "emi.js"));

const step = (name) => console.log(`step: ${name}`);

async function rejects(promise, check) {
  try {
    await promise;
  } catch (err) {
    check(err);
    return;
  }
  assert.fail("the call did not fail");
}

// testRetries: 503 then 200 against a local server is retried with the same
// Idempotency-Key and a fresh signature, after Retry-After; a 400 is never
// retried; retries stop after maxRetries.
async function testRetries() {
  const seen = [];
  const script = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      const [status, headers, answer] = script.shift() || [500, {}, { code: 10000, message: "unexpected request" }];
      res.writeHead(status, { ...headers, "Content-Type": "application/json" });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const waits = [];
  const client = new emi.Client(base, "ak_test", "secret", { sleep: async (s) => { waits.push(s); } });
  const unavailable = { code: 10503, message: "services.general.unavailable" };
  try {
    script.push([503, { "Retry-After": "2" }, unavailable], [200, {}, { code: 0, data: { token: "t1" } }]);
    const res = await client.request("POST", "/v2/users", { first_name: "Mara" });
    assert.deepEqual(res.data, { token: "t1" });
    assert.equal(seen.length, 2);
    assert.deepEqual(waits, [2]);
    assert.ok(seen[0].headers["idempotency-key"]);
    assert.equal(seen[0].headers["idempotency-key"], seen[1].headers["idempotency-key"], "the retry changed the Idempotency-Key");
    assert.notEqual(seen[0].headers["x-nonce"], seen[1].headers["x-nonce"], "the retry was not signed again");
    assert.notEqual(seen[0].headers["x-hash"], seen[1].headers["x-hash"]);
    assert.equal(seen[0].body, seen[1].body);

    seen.length = 0;
    waits.length = 0;
    script.push([503, {}, unavailable], [429, {}, { code: 10029, message: "services.general.rate_limited" }], [200, {}, { code: 0, data: {} }]);
    await client.request("GET", "/v2/partner");
    assert.equal(seen.length, 3);
    assert.equal(waits.length, 2);
    assert.ok(waits[0] >= 0 && waits[0] <= 0.5 && waits[1] >= 0 && waits[1] <= 1, `backoff waits ${waits}`);

    seen.length = 0;
    script.push([400, {}, { code: -3, message: "service.users.validation", errors: [{ field: "email", message: "is required" }] }]);
    await rejects(client.request("POST", "/v2/users", {}), (err) => {
      assert.ok(err instanceof emi.ApiError);
      assert.equal(err.status, 400);
      assert.equal(err.code, -3);
      assert.equal(err.errors[0].field, "email");
    });
    assert.equal(seen.length, 1, "a 400 was retried");

    seen.length = 0;
    for (let i = 0; i < 4; i++) script.push([503, { "Retry-After": "0" }, unavailable]);
    await rejects(client.request("GET", "/v2/partner"), (err) => assert.equal(err.code, 10503));
    assert.equal(seen.length, 4, "want 1 + maxRetries (3) attempts");

    seen.length = 0;
    script.push([503, {}, { code: 10504, message: "services.general.outcome_unknown" }]);
    await rejects(client.request("PUT", "/v2/cards/c1/status", { status: "inactive" }), (err) => assert.equal(err.code, 10504));
    assert.equal(seen.length, 1, "a PUT was retried after 10504 (outcome unknown)");
  } finally {
    await new Promise((r) => server.close(r));
  }

  // A network error (nothing listens) is retried for a GET, then thrown.
  waits.length = 0;
  const closed = new emi.Client(base, "k", "s", { maxRetries: 2, sleep: async (s) => { waits.push(s); } });
  await rejects(closed.request("GET", "/v2/partner"), (err) => assert.ok(err instanceof emi.NetworkError, String(err)));
  assert.equal(waits.length, 2, "a refused GET was not retried twice");
}

async function journey() {
  const client = new emi.Client(process.env.EMI_URL, process.env.EMI_API_KEY, process.env.EMI_API_SECRET);

  step("partner_details, signature versions 2 and 1");
  const { merchant } = await client.partner();
  const v1 = new emi.Client(client.baseUrl, client.apiKey, client.apiSecret, { signatureVersion: 1 });
  assert.equal((await v1.partner()).merchant, merchant);

  step("user_create");
  const email = `mara.${process.hrtime.bigint()}@example.com`;
  const user = await client.createUser({ merchant, email, first_name: "Mara", last_name: "Velikova",
    birthday: "1990-04-12", nationality: "BG", country: "BG" });
  assert.equal(user.token.length, 36);

  step("aml_check of a clean name, then of a listed one");
  const clear = await client.amlCheck({ first_name: "Elin", last_name: "Sandqvist", nationality: "SE" });
  assert.equal(clear.status, "clear");
  await rejects(client.amlCheck({ first_name: "Kim", last_name: "Jong Un", nationality: "KP", birthday: "1984-01-08" }), (err) => {
    assert.ok(err instanceof emi.ApiError, String(err));
    assert.equal(err.code, 18001);
    assert.equal(err.status, 409);
    assert.equal(err.key, "service.aml.match.found");
    assert.equal(err.data.status, "match");
    assert.equal(err.data.token.length, 36);
  });

  step("account_create (two), card_create");
  const acc1 = await client.createAccount({ program: "account_eur", user: user.token });
  const acc2 = await client.createAccount({ program: "account_eur", user: user.token, alias: "savings" });
  assert.equal(acc1.balances.length, 1);
  const card = await client.createCard({ account: acc1.token, type: "virtual" });
  assert.equal(card.status, "active");
  assert.equal(card.account, acc1.token);
  await rejects(client.createCard({ account: acc1.token, type: "virtual" }), (err) => {
    assert.equal(err.code, 12004);
    assert.equal(err.status, 409);
  });

  step("accounts_list, one per page");
  const listed = [];
  for await (const a of client.list("/v2/accounts", { limit: 1, query: { user: user.token } })) listed.push(a.token);
  assert.deepEqual(listed.sort(), [acc1.token, acc2.token].sort());

  step("the same POST twice with one Idempotency-Key");
  const key = `journey-${process.hrtime.bigint()}`;
  const body = { merchant, email: `twice.${email}`, first_name: "Elin", last_name: "Sandqvist" };
  const first = await client.request("POST", "/v2/users", body, { idempotencyKey: key });
  const again = await client.request("POST", "/v2/users", body, { idempotencyKey: key });
  assert.deepEqual(again.data, first.data);
  assert.equal(first.replayed, false);
  assert.equal(again.replayed, true);

  step("events after a cursor");
  await client.setCardStatus(card.token, "inactive");
  await client.setCardStatus(card.token, "active");
  const events = [];
  for await (const e of client.list("/v2/events", { limit: 100 })) events.push(e);
  assert.ok(events.length >= 2, `${events.length} events`);
  const oldest = events[events.length - 1];
  const after = [];
  for await (const e of client.list("/v2/events", { limit: 1, after: oldest.id })) after.push(e.id);
  assert.deepEqual(after, events.slice(0, -1).reverse().map((e) => e.id));

  step("webhook verification");
  let secret = process.env.EMI_WEBHOOK_SECRET_NEW;
  let secrets;
  let id;
  let ts;
  let payload;
  let signature;
  if (secret) {
    secrets = [process.env.EMI_WEBHOOK_SECRET_OLD, secret];
    id = process.env.EMI_WEBHOOK_ID;
    ts = Number(process.env.EMI_WEBHOOK_TIMESTAMP);
    payload = Buffer.from(process.env.EMI_WEBHOOK_BODY);
    signature = process.env.EMI_WEBHOOK_SIGNATURE;
  } else {
    secret = `whsec_${crypto.randomBytes(32).toString("base64")}`;
    secrets = [secret];
    id = "msg_1";
    ts = Math.floor(Date.now() / 1000);
    payload = Buffer.from('{"id":"msg_1","type":"webhook.test","data":{}}');
    signature = emi.signWebhook(secret, id, ts, payload);
  }
  const headers = { "Webhook-Id": id, "Webhook-Timestamp": String(ts), "Webhook-Signature": signature };
  for (const s of secrets) {
    const event = emi.verifyWebhook(s, headers, payload, { now: ts + 10 });
    assert.equal(event.id, id);
  }
  assert.ok(signature.split(" ").includes(emi.signWebhook(secrets[secrets.length - 1], id, ts, payload)), "signWebhook differs from emi's");
  const tampered = Buffer.from(payload.toString().replace("}", " }"));
  assert.throws(() => emi.verifyWebhook(secret, headers, tampered, { now: ts }), emi.WebhookVerificationError);
  assert.throws(() => emi.verifyWebhook(secret, headers, payload, { now: ts + 360 }), emi.WebhookVerificationError);
}

(async () => {
  await testRetries();
  console.log("retries: ok");
  await journey();
  console.log("journey: ok");
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
