// A small client for the emi partner API: Node.js 18 or later, built-in
// modules only (node:crypto and the global fetch). One file: copy it beside
// your code (download it from /docs/sdk/node/emi.js on the server you use);
// it is not on npm. CommonJS: `require("./emi.js")`, or from an ES module
// `import { Client } from "./emi.js"`.
//
// What it does for you:
//   - signs every request with signature version 2 (method, path, query, a
//     fresh x-nonce and the body as sent); { signatureVersion: 1 } is available;
//   - sends an Idempotency-Key (a random UUID unless you give one) with every
//     POST, and keeps it across retries;
//   - retries network errors (GET and POST only), 429 and 503 with
//     exponential backoff and jitter, honouring Retry-After, signing each
//     attempt again; never any other 4xx;
//   - throws ApiError for every error answer, with the envelope's code,
//     message key, description, errors list, data and the HTTP status;
//   - iterates over lists page by page, or after a cursor (events);
//   - verifies webhook signatures (Standard Webhooks).
//
//   const { Client } = require("./emi.js");
//   const client = new Client(process.env.EMI_URL, process.env.EMI_API_KEY, process.env.EMI_API_SECRET);
//   const user = await client.createUser({ merchant, email: "mara@example.com", first_name: "Mara", last_name: "Velikova" });
//   const account = await client.createAccount({ program: "account_eur", user: user.token });
"use strict";

const crypto = require("node:crypto");

const VERSION = "1.0.0";

// The API's operations: method, path pattern and the operation name a
// request is signed with. A route missing here can be called with
// request(..., { operation: "name" }).
const ROUTES = [
  ["POST", "/v1/aml", "aml_check"],
  ["POST", "/v1/kyc", "kyc_init"],
  ["POST", "/v1/sandbox/aml/{aml}", "sandbox_aml_review"],
  ["POST", "/v1/sandbox/kyc/{user}", "sandbox_kyc_decide"],
  ["GET", "/v2/partner", "partner_details"],
  ["GET", "/v2/events/{page}/{limit}", "events_list"],
  ["GET", "/v2/webhooks", "webhook_endpoints_list"],
  ["POST", "/v2/webhooks", "webhook_endpoint_create"],
  ["POST", "/v2/webhooks/{endpoint}/rotate", "webhook_endpoint_rotate_secret"],
  ["POST", "/v2/webhooks/{endpoint}/test", "webhook_endpoint_test"],
  ["POST", "/v2/webhooks/{endpoint}/delete", "webhook_endpoint_delete"],
  ["POST", "/v2/webhooks/{endpoint}/replay", "webhook_delivery_replay"],
  ["POST", "/v2/users", "user_create"],
  ["GET", "/v2/users/{user}", "user_details"],
  ["PUT", "/v2/users/{user}", "user_update"],
  ["DELETE", "/v2/users/{user}", "user_remove"],
  ["POST", "/v2/accounts", "account_create"],
  ["GET", "/v2/accounts/{account}", "account_details"],
  ["PUT", "/v2/accounts/{account}/status", "account_status"],
  ["DELETE", "/v2/accounts/{account}", "account_terminate"],
  ["GET", "/v2/accounts/{page}/{limit}", "accounts_list"],
  ["GET", "/v2/accounts/{account}/transactions/{page}/{limit}", "account_transactions"],
  ["POST", "/v2/cards", "card_create"],
  ["GET", "/v2/cards/{card}", "card_details"],
  ["DELETE", "/v2/cards/{card}", "card_terminate"],
  ["PUT", "/v2/cards/{card}/convert", "card_convert"],
  ["PUT", "/v2/cards/{card}/activate", "card_activate"],
  ["PUT", "/v2/cards/{card}/status", "card_status"],
  ["PUT", "/v2/cards/{card}/assign", "card_assign"],
  ["PUT", "/v2/cards/{card}/groups", "card_groups"],
  ["GET", "/v2/cards/{card}/pin", "card_retrieve_pin"],
  ["POST", "/v2/cards/{card}/pin/send", "card_send_pin"],
  ["DELETE", "/v2/cards/{card}/pin/reset", "card_reset_pin"],
  ["POST", "/v2/cards/{card}/3ds", "card_3ds_enrol"],
  ["PUT", "/v2/cards/{card}/3ds", "card_3ds_update"],
  ["DELETE", "/v2/cards/{card}/3ds", "card_3ds_remove"],
  ["GET", "/v2/cards/{card}/first-half", "card_number"],
  ["GET", "/v2/cards/{card}/second-half", "card_number"],
  ["POST", "/v2/cards/{card}/wallets", "card_wallet_provision"],
  ["GET", "/v2/cards/{page}/{limit}", "cards_list"],
  ["GET", "/v2/cards/{card}/authorizations/{page}/{limit}", "card_authorizations"],
  ["POST", "/v2/transfers", "transfer_create"],
  ["GET", "/v2/transfers/{transfer}", "transfer_details"],
  ["POST", "/v2/transfers/external", "transfer_external_create"],
  ["GET", "/v2/information_requests", "information_requests_list"],
  ["GET", "/v2/information_requests/{information_request}", "information_request_details"],
  ["POST", "/v2/information_requests/{information_request}/answer", "information_request_answer"],
  ["POST", "/v2/sandbox/cards/{card}/authorizations", "sandbox_card_authorize"],
  ["POST", "/v2/sandbox/authorizations/{authorization}/clear", "sandbox_authorization_clear"],
  ["POST", "/v2/sandbox/authorizations/{authorization}/reverse", "sandbox_authorization_reverse"],
  ["POST", "/v2/sandbox/transfers/{transfer}/complete", "sandbox_transfer_complete"],
  ["POST", "/v2/sandbox/transfers/{transfer}/return", "sandbox_transfer_return"],
  ["POST", "/v2/sandbox/transfers/{transfer}/review", "sandbox_transfer_review"],
  ["POST", "/v2/sandbox/incoming", "sandbox_incoming_credit"],
  ["GET", "/v2/webhooks/{endpoint}", "webhook_endpoint_details"],
  ["GET", "/v2/transfers", "transfers_list"],
  ["POST", "/v2/sandbox/events", "sandbox_event_trigger"],
  ["POST", "/v2/sandbox/reset", "sandbox_reset"],
  ["POST", "/v2/sandbox/test_clock", "sandbox_test_clock_create"],
  ["GET", "/v2/sandbox/test_clock", "sandbox_test_clock_details"],
  ["DELETE", "/v2/sandbox/test_clock", "sandbox_test_clock_delete"],
  ["POST", "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance"],
  ["PUT", "/v2/webhooks/{endpoint}", "webhook_endpoint_update"],
  ["DELETE", "/v2/webhooks/{endpoint}", "webhook_endpoint_delete"],
  ["POST", "/v2/webhooks/{endpoint}/disable", "webhook_endpoint_disable"],
  ["POST", "/v2/webhooks/{endpoint}/enable", "webhook_endpoint_enable"],
  ["POST", "/v3/applications", "application_create"],
  ["GET", "/v3/applications/{application}", "application_details"],
  ["PUT", "/v3/applications/{application}/companies", "company_update"],
  ["POST", "/v3/applications/{application}/companies/documents", "company_add_document"],
  ["POST", "/v3/applications/{application}/companies/members", "company_add_member"],
  ["PUT", "/v3/applications/{application}/companies/members/{token}", "company_member_update"],
  ["POST", "/v3/applications/{application}/companies/members/{token}/documents", "company_member_add_document"],
  ["POST", "/v3/sandbox/applications/{application}/decision", "sandbox_application_decide"],
];

// operation returns the signed operation name of method and path (its
// query ignored), or undefined. A literal segment wins over a parameter:
// /v2/cards/{card}/pin before /v2/cards/{page}/{limit}.
function operation(method, path) {
  const segs = path.split("?")[0].replace(/^\/+|\/+$/g, "").split("/");
  let best;
  let bestScore = -1;
  for (const [m, pattern, op] of ROUTES) {
    const pat = pattern.replace(/^\/+|\/+$/g, "").split("/");
    if (m !== method.toUpperCase() || pat.length !== segs.length) continue;
    let score = 0;
    for (let i = 0; i < pat.length && score >= 0; i++) {
      if (pat[i].startsWith("{") && segs[i] !== "") continue;
      score = pat[i] === segs[i] ? score + 1 : -1;
    }
    if (score > bestScore) [best, bestScore] = [op, score];
  }
  return best;
}

// ApiError is an error answer of the API: code (18001, 10001, ...), message
// (its dotted key), status (HTTP), errors ([{field, message}]), data (an AML
// match, 18001, carries the check), description, docUrl, requestId. An
// answer that is not the API's envelope (a proxy's page) has code 0 and
// message "".
class ApiError extends Error {
  constructor({ status, code, message, description = "", docUrl = "", errors = [], data, requestId = "", retryAfter }) {
    let text = `HTTP ${status}, code ${code} ${message}`;
    for (const e of errors) text += `; ${e.field}: ${e.message}`;
    if (description) text += ` (${description})`;
    super(text);
    this.name = "ApiError";
    // The envelope's message (its dotted key) is `key`: `message` is the
    // Error's text.
    Object.assign(this, { status, code, key: message, description, docUrl, errors, data, requestId, retryAfter });
  }
}

class NetworkError extends Error {
  constructor(cause) {
    super(`emi: ${cause.cause ? cause.cause.message || cause.cause.code : cause.message}`, { cause });
    this.name = "NetworkError";
  }
}

function hmacHex(secret, parts) {
  const m = crypto.createHmac("sha256", secret);
  for (const p of parts) m.update(p);
  return m.digest("hex");
}

// signV1 is x-hash of signature version 1: the body (POST and PUT only)
// without its space, tab, CR and LF bytes.
function signV1(secret, apiKey, timestamp, op, method, body) {
  const signed = method === "POST" || method === "PUT"
    ? Buffer.from(body || "").filter((c) => c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a)
    : Buffer.alloc(0);
  return hmacHex(secret, [apiKey + timestamp + op, signed]);
}

// signV2 is x-hash of signature version 2: api_key + timestamp + operation
// + METHOD + request target (path and query as sent) + nonce + the body as
// sent.
function signV2(secret, apiKey, timestamp, op, method, target, nonce, body) {
  return hmacHex(secret, [apiKey + timestamp + op + method.toUpperCase() + target + nonce, Buffer.from(body || "")]);
}

function retryAfterSeconds(value) {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max((t - Date.now()) / 1000, 0);
}

// Client calls the API. maxRetries retries follow the first attempt; the
// wait before retry n is random up to min(backoffMax, backoffBase * 2^n)
// seconds, or Retry-After when the answer has one (one longer than
// maxRetryAfter is thrown at once).
class Client {
  constructor(baseUrl, apiKey, apiSecret, options = {}) {
    const o = { signatureVersion: 2, maxRetries: 3, timeout: 30, backoffBase: 0.5, backoffMax: 8, maxRetryAfter: 60, ...options };
    if (o.signatureVersion !== 1 && o.signatureVersion !== 2) throw new TypeError("signatureVersion is 1 or 2");
    Object.assign(this, o, { baseUrl: String(baseUrl).replace(/\/+$/, ""), apiKey, apiSecret });
    // Tests replace these.
    this.sleep = this.sleep || ((seconds) => new Promise((r) => setTimeout(r, seconds * 1000)));
    this.now = this.now || (() => Date.now() / 1000);
  }

  // request sends one call and resolves to { status, headers, data,
  // replayed, idempotencyKey }, or throws ApiError. body is undefined, a
  // string or Buffer (sent as it is) or a value JSON.stringify encodes;
  // path starts with the version and may carry a query.
  async request(method, path, body, { idempotencyKey, operation: op, headers } = {}) {
    method = method.toUpperCase();
    let raw;
    if (body !== undefined && body !== null) {
      raw = typeof body === "string" || Buffer.isBuffer(body) ? Buffer.from(body) : Buffer.from(JSON.stringify(body));
    }
    op = op || operation(method, path);
    if (!op) throw new TypeError(`no operation known for ${method} ${path}: pass { operation }`);
    const key = idempotencyKey || (method === "POST" ? crypto.randomUUID() : undefined);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this._once(method, path, op, raw, key, headers || {});
      } catch (err) {
        const wait = this._retryWait(method, err, attempt);
        if (wait === undefined) throw err;
        await this.sleep(wait);
      }
    }
  }

  async _once(method, path, op, body, key, extra) {
    const url = new URL(this.baseUrl + path);
    const ts = String(Math.floor(this.now()));
    const h = { ...extra, "User-Agent": `emi-node/${VERSION}`, Accept: "application/json", "x-api-key": this.apiKey, "x-timestamp": ts };
    if (body) h["Content-Type"] = "application/json";
    if (key) h["Idempotency-Key"] = key;
    if (this.signatureVersion === 1) {
      h["x-hash"] = signV1(this.apiSecret, this.apiKey, ts, op, method, body);
    } else {
      const nonce = crypto.randomBytes(8).toString("hex");
      Object.assign(h, { "x-signature-version": "2", "x-nonce": nonce,
        "x-hash": signV2(this.apiSecret, this.apiKey, ts, op, method, url.pathname + url.search, nonce, body) });
    }
    let res;
    let text;
    try {
      res = await fetch(url, { method, headers: h, body, signal: AbortSignal.timeout(this.timeout * 1000) });
      text = await res.text();
    } catch (err) {
      throw new NetworkError(err);
    }
    const requestId = res.headers.get("x-request-id") || "";
    const retryAfter = retryAfterSeconds(res.headers.get("retry-after"));
    let env;
    try {
      env = JSON.parse(text);
    } catch {
      env = undefined;
    }
    if (!env || typeof env.code !== "number") {
      throw new ApiError({ status: res.status, code: 0, message: "", description: text.slice(0, 200).trim(), requestId, retryAfter });
    }
    if (env.code !== 0 || res.status >= 300) {
      throw new ApiError({ status: res.status, code: env.code, message: env.message || "", description: env.description,
        docUrl: env.doc_url, errors: env.errors || [], data: env.data, requestId, retryAfter });
    }
    return { status: res.status, headers: res.headers, data: env.data, replayed: res.headers.get("idempotent-replayed") === "true", idempotencyKey: key };
  }

  // _retryWait is the seconds to wait before retrying, or undefined:
  // network errors for GET and POST (a POST carries its Idempotency-Key),
  // 429 and 503 for every method (nothing was done), except 10504 ("outcome
  // unknown") where only a POST is retried.
  _retryWait(method, err, attempt) {
    if (attempt >= this.maxRetries) return undefined;
    if (err instanceof NetworkError) return method === "GET" || method === "POST" ? this._backoff(attempt) : undefined;
    if (!(err instanceof ApiError) || (err.status !== 429 && err.status !== 503)) return undefined;
    if (err.code === 10504 && method !== "POST") return undefined;
    if (err.retryAfter !== undefined) return err.retryAfter <= this.maxRetryAfter ? err.retryAfter : undefined;
    return this._backoff(attempt);
  }

  _backoff(attempt) {
    return Math.random() * Math.min(this.backoffMax, this.backoffBase * 2 ** attempt);
  }

  async _object(method, path, body, idempotencyKey) {
    return (await this.request(method, path, body, { idempotencyKey })).data;
  }

  // Helpers for the getting-started journey; each resolves to the answer's data.

  // partner is partner_details: whom the credentials belong to (merchant is
  // the master merchant token for users and applications).
  partner() { return this._object("GET", "/v2/partner"); }
  // createUser is user_create.
  createUser(user, idempotencyKey) { return this._object("POST", "/v2/users", user, idempotencyKey); }
  // amlCheck is aml_check; a match throws ApiError code 18001 whose data is the check.
  amlCheck(person, idempotencyKey) { return this._object("POST", "/v1/aml", person, idempotencyKey); }
  // createAccount is account_create (program, and user or merchant).
  createAccount(account, idempotencyKey) { return this._object("POST", "/v2/accounts", account, idempotencyKey); }
  // createCard is card_create (account and type "virtual", say).
  createCard(card, idempotencyKey) { return this._object("POST", "/v2/cards", card, idempotencyKey); }
  // setCardStatus is card_status ("active" or "inactive").
  setCardStatus(card, status) { return this._object("PUT", `/v2/cards/${encodeURIComponent(card)}/status`, { status }); }

  // list iterates (for await) over a list given without its /{page}/{limit}
  // ("/v2/accounts", "/v2/events"). With after (the id of the last item you
  // processed: events_list's cursor) it follows the cursor, oldest first,
  // until none is left; without it, it reads pages 1, 2, ... (newest first)
  // until total is reached. query holds the filters (user, program, type).
  async *list(path, { limit = 10, after, query = {} } = {}) {
    let seen = 0;
    for (let page = 1; ; page++) {
      const q = new URLSearchParams(query);
      if (after) q.set("after", after);
      let target = `${path.replace(/\/+$/, "")}/${after ? 1 : page}/${limit}`;
      if ([...q].length) target += `?${q}`;
      const data = (await this.request("GET", target)).data || {};
      const items = data.items || [];
      yield* items;
      seen += items.length;
      if (items.length === 0 || items.length < limit) return;
      if (after) {
        const last = items[items.length - 1];
        after = last.id || last.token;
        if (!after) return;
      } else if (seen >= (data.total || 0)) {
        return;
      }
    }
  }
}

class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

const DEFAULT_WEBHOOK_TOLERANCE = 300; // seconds, either direction

function webhookKey(secret) {
  const b64 = String(secret).startsWith("whsec_") ? secret.slice(6) : String(secret);
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? Buffer.from(b64, "base64") : Buffer.alloc(0);
  if (key.length === 0) throw new TypeError("the webhook secret is not whsec_ followed by base64");
  return key;
}

function webhookMac(key, id, timestamp, body) {
  return crypto.createHmac("sha256", key).update(`${id}.${timestamp}.`).update(Buffer.from(body)).digest();
}

// signWebhook returns the webhook-signature value emi sends for a delivery
// (one secret): for tests of your receiver.
function signWebhook(secret, id, timestamp, body) {
  return `v1,${webhookMac(webhookKey(secret), id, Math.floor(timestamp), body).toString("base64")}`;
}

// verifyWebhook checks a delivery as the Standard Webhooks specification
// says and returns the event. headers is a plain object (any case of the
// names) or a Headers; body the raw body (string or Buffer) as received,
// before any JSON parsing. webhook-signature holds one or more
// "v1,<base64>" signatures (two while a secret is rotated) of webhook-id +
// "." + webhook-timestamp + "." + body, HMAC-SHA256 keyed with the base64
// after "whsec_"; one must match (compared in constant time) and the
// timestamp must be within toleranceSeconds of now. Throws
// WebhookVerificationError otherwise.
function verifyWebhook(secret, headers, body, { toleranceSeconds = DEFAULT_WEBHOOK_TOLERANCE, now } = {}) {
  const key = webhookKey(secret);
  const get = (name) => {
    if (typeof headers.get === "function") return headers.get(name);
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(" ") : v;
    return undefined;
  };
  const id = get("webhook-id");
  const ts = get("webhook-timestamp");
  const sigs = get("webhook-signature");
  if (!id || !ts || !sigs) throw new WebhookVerificationError("webhook-id, webhook-timestamp and webhook-signature are required");
  if (!/^\d+$/.test(ts)) throw new WebhookVerificationError("webhook-timestamp is not UNIX seconds");
  const current = now === undefined ? Date.now() / 1000 : now;
  if (Math.abs(current - Number(ts)) > toleranceSeconds) {
    throw new WebhookVerificationError(`webhook-timestamp is ${Math.round(current - Number(ts))} s away from now`);
  }
  const want = webhookMac(key, id, ts, body);
  for (const sig of sigs.split(" ")) {
    const [version, b64] = sig.split(",", 2);
    if (version !== "v1" || !b64) continue;
    const got = Buffer.from(b64, "base64");
    if (got.length === want.length && crypto.timingSafeEqual(got, want)) {
      try {
        return JSON.parse(Buffer.from(body).toString("utf8"));
      } catch {
        throw new WebhookVerificationError("the body is not JSON");
      }
    }
  }
  throw new WebhookVerificationError("no signature matches");
}

module.exports = { Client, ApiError, NetworkError, WebhookVerificationError, ROUTES, VERSION, DEFAULT_WEBHOOK_TOLERANCE,
  operation, signV1, signV2, signWebhook, verifyWebhook };
