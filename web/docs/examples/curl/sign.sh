#!/usr/bin/env bash
# Call the emi partner API with signature version 2: curl and openssl.
#
#   EMI_URL={base_url} EMI_API_KEY=... EMI_API_SECRET=... bash sign.sh
set -euo pipefail

# x-hash: HMAC-SHA256 over api_key + timestamp + operation + METHOD + path
# (with its query) + nonce + the body exactly as sent.
sign() { # timestamp operation method target nonce body
  printf '%s' "${EMI_API_KEY}$1$2$3$4$5$6" | openssl dgst -sha256 -hmac "$EMI_API_SECRET" | awk '{print $NF}'
}

TS=$(date +%s)
NONCE=$(openssl rand -hex 8)
printf 'GET /v2/partner: '
curl -sS -w '\n' "$EMI_URL/v2/partner" -H "x-api-key: $EMI_API_KEY" -H "x-timestamp: $TS" \
  -H 'x-signature-version: 2' -H "x-nonce: $NONCE" -H "x-hash: $(sign "$TS" partner_details GET /v2/partner "$NONCE" '')"

BODY='{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}'
NONCE=$(openssl rand -hex 8)
printf 'POST /v1/aml: '
curl -sS -w '\n' "$EMI_URL/v1/aml" -H "x-api-key: $EMI_API_KEY" -H "x-timestamp: $TS" \
  -H 'x-signature-version: 2' -H "x-nonce: $NONCE" -H "x-hash: $(sign "$TS" aml_check POST /v1/aml "$NONCE" "$BODY")" \
  -H 'content-type: application/json' -d "$BODY"
