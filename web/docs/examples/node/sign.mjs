// Call the emi partner API with signature version 1, Node 18+ only
// (node:crypto and the built-in fetch).
//
//   EMI_URL=http://127.0.0.1:8080 EMI_API_KEY=... EMI_API_SECRET=... node sign.mjs
import { createHmac } from "node:crypto";

// x-hash: HMAC-SHA256 over api_key + timestamp + operation + body, the body
// without space, tab, CR and LF bytes (POST and PUT only).
function sign(secret, key, ts, operation, body) {
  const stripped = Buffer.from(body).filter((c) => c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a);
  return createHmac("sha256", secret).update(key + ts + operation).update(stripped).digest("hex");
}

async function call(method, path, operation, body = "") {
  const key = process.env.EMI_API_KEY;
  const ts = String(Math.floor(Date.now() / 1000));
  const headers = { "x-api-key": key, "x-timestamp": ts, "x-hash": sign(process.env.EMI_API_SECRET, key, ts, operation, body) };
  if (body) headers["Content-Type"] = "application/json";
  const res = await fetch(process.env.EMI_URL + path, { method, headers, body: body || undefined });
  process.stdout.write(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
}

await call("GET", "/v2/partner", "partner_details");
await call("POST", "/v1/aml", "aml_check", '{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}');
