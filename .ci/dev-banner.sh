#!/usr/bin/env bash
# The text `make run` prints before it serves: the URL, the sandbox logins,
# the demo partner's credentials and signed requests to paste.
#
#   .ci/dev-banner.sh URL PUBLIC_URL DATABASE_URL [WEBHOOK_URL]
#
# It reads the demo partner from .dev/partner.json in the current directory
# (what `emi partner create --json` printed). .ci/dev-run.sh runs it from the
# project's root; TestReadmeAndMakeRunExamples (cmd/emi/examples_test.go)
# runs it against a live server and runs every example it prints:
#
# - an example is a paragraph whose every line is indented by two spaces,
#   with a blank line (or the start or end of the text) before and after;
#   the examples of one text run in order in one bash session, as a user
#   pastes them into one terminal (a later one may use an earlier one's
#   variables), each in a second of its own;
# - each request it makes must answer {"code":0,...}, except the last,
#   which answers the code that the paragraph just before the example
#   names as "answers NNNNN" (or a `# {"code":N` comment in the example).
#
# So a new example here is tested without editing the test. Signatures:
# contract §2 (version 1 signs the body with every space, tab, CR and LF
# removed, while curl sends it as it is; version 2 signs it as sent, after
# the method, the request target and the x-nonce).
set -euo pipefail

[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: $0 URL PUBLIC_URL DATABASE_URL [WEBHOOK_URL]" >&2; exit 2; }
url=$1 public_url=$2 database_url=$3 webhook_url=${4:-http://127.0.0.1:9999/webhooks}
webhook_addr=${webhook_url#*://}
webhook_addr=${webhook_addr%%/*}
[ -s .dev/partner.json ] || { echo "$0: no .dev/partner.json in $(pwd)" >&2; exit 1; }

field() { sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p' .dev/partner.json; }
api_key=$(field api_key)
api_secret=$(field api_secret)

cat <<EOF

emi (sandbox) will serve on $url   (public URL $public_url)
  back office: $url/backoffice/
  health:      curl -fsS $url/healthz
  database:    $database_url

Back-office sign-in (sandbox staff, one per role), password: Sandbox-Staff-2026
  admin@sandbox.emi        admin: staff, partners, audit
  underwriter@sandbox.emi  underwriter: applications
  compliance@sandbox.emi   compliance: AML and KYC reviews, audit
  cs@sandbox.emi           customer service: accounts and cards
  auditor@sandbox.emi      auditor: read-only
Each has two-factor authentication enrolled; print the current code with
  make totp EMAIL=admin@sandbox.emi

Demo partner (.dev/partner.json):
  api_key:        $api_key
  api_secret:     $api_secret
  merchant:       $(field merchant)
  webhook_secret: $(field webhook_secret)   (webhooks go to $webhook_url)
  receive them:   bin/emi webhooks listen --addr $webhook_addr --secret $(field webhook_secret)
                  (prints every event and whether its signature verifies; reference: $public_url/docs)

A signed request to GET /v2/partner (operation partner_details). Paste it as it is: it
signs with the current time, and x-timestamp must be within 15 s of the server's clock.

  key='$api_key' secret='$api_secret'
  ts=\$(date +%s)
  hash=\$(printf '%s' "\$key\$ts" partner_details | openssl dgst -sha256 -hmac "\$secret" | sed 's/^.*= //')
  curl -sS -H "x-api-key: \$key" -H "x-timestamp: \$ts" -H "x-hash: \$hash" $url/v2/partner

An AML check of a listed person (answers 18001; the check waits in the back office's
AML review queue for compliance@sandbox.emi). curl sends the body as it is; x-hash
signs it with every space, tab, CR and LF removed (tr -d):

  body='{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"}'
  ts=\$(date +%s)
  hash=\$(printf '%s' "\$key\$ts" aml_check "\$body" | tr -d ' \t\r\n' | openssl dgst -sha256 -hmac "\$secret" | sed 's/^.*= //')
  curl -sS -H "x-api-key: \$key" -H "x-timestamp: \$ts" -H "x-hash: \$hash" -H 'content-type: application/json' -d "\$body" $url/v1/aml

The same check signed with version 2 (answers 18001): x-hash also covers the method, the
request target and the x-nonce, and signs the body exactly as curl sends it:

  nonce=\$(openssl rand -hex 8)
  ts=\$(date +%s)
  hash=\$(printf '%s' "\$key\$ts" aml_check POST /v1/aml "\$nonce" "\$body" | openssl dgst -sha256 -hmac "\$secret" | sed 's/^.*= //')
  curl -sS -H 'x-signature-version: 2' -H "x-nonce: \$nonce" -H "x-api-key: \$key" -H "x-timestamp: \$ts" -H "x-hash: \$hash" -H 'content-type: application/json' -d "\$body" $url/v1/aml

EOF
