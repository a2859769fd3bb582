// Call the emi partner API with signature version 2, Node 18+ only
// (node:crypto and the built-in fetch).
//
//   EMI_URL={base_url} EMI_API_KEY=... EMI_API_SECRET=... node sign.mjs
import { createHmac, randomBytes } from "node:crypto";

// x-hash: HMAC-SHA256 over api_key + timestamp + operation + METHOD + path
// (with its query) + nonce + the body exactly as sent.
function sign(secret, key, ts, operation, method, target, nonce, body) {
  return createHmac("sha256", secret).update(key + ts + operation + method + target + nonce).update(body).digest("hex");
}

async function call(method, path, operation, body = "") {
  const key = process.env.EMI_API_KEY;
  const ts = String(Math.floor(Date.now() / 1000));
  const nonce = randomBytes(8).toString("hex");
  const headers = { "x-api-key": key, "x-timestamp": ts, "x-signature-version": "2", "x-nonce": nonce,
    "x-hash": sign(process.env.EMI_API_SECRET, key, ts, operation, method, path, nonce, body) };
  if (body) headers["Content-Type"] = "application/json";
  const res = await fetch(process.env.EMI_URL + path, { method, headers, body: body || undefined });
  process.stdout.write(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
}

await call("GET", "/v2/partner", "partner_details");
await call("POST", "/v1/aml", "aml_check", '{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}');
