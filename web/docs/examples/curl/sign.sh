#!/usr/bin/env bash
# Call the emi partner API with signature version 1: curl and openssl.
#
#   EMI_URL=http://127.0.0.1:8080 EMI_API_KEY=... EMI_API_SECRET=... bash sign.sh
set -euo pipefail

# x-hash: HMAC-SHA256 over api_key + timestamp + operation + body, the body
# without space, tab, CR and LF bytes (POST and PUT only).
sign() { # timestamp operation body
  printf '%s' "${EMI_API_KEY}$1$2$(printf '%s' "$3" | tr -d ' \t\r\n')" |
    openssl dgst -sha256 -hmac "$EMI_API_SECRET" | awk '{print $NF}'
}

TS=$(date +%s)
printf 'GET /v2/partner: '
curl -sS -w '\n' "$EMI_URL/v2/partner" -H "x-api-key: $EMI_API_KEY" -H "x-timestamp: $TS" \
  -H "x-hash: $(sign "$TS" partner_details '')"

BODY='{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}'
printf 'POST /v1/aml: '
curl -sS -w '\n' "$EMI_URL/v1/aml" -H "x-api-key: $EMI_API_KEY" -H "x-timestamp: $TS" \
  -H "x-hash: $(sign "$TS" aml_check "$BODY")" -H 'content-type: application/json' -d "$BODY"
