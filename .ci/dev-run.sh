#!/usr/bin/env bash
# The development environment behind `make run`, `make migrate` and
# `make seed` (contract §10), run from the project's root:
#
#   .ci/dev-run.sh run       migrate, seed, create the demo partner once,
#                            print the URL, credentials and a signed curl
#                            example, then exec `emi serve`
#   .ci/dev-run.sh migrate   emi migrate
#   .ci/dev-run.sh seed      emi seed
#
# It brings up the local PostgreSQL with .ci/postgres.sh (installing it when
# root), creates the database EMI_DB_NAME (default emi) when missing, and keeps
# a development master key in .dev/master.key (git-ignored, created once,
# never printed). The demo partner's credentials live in .dev/partner.json.
#
# Environment: EMI_BIN (bin/emi), EMI_ADDR (127.0.0.1:8080), EMI_PUBLIC_URL
# (the server's own URL), EMI_DB_NAME (emi), EMI_LOG_FORMAT (text); PG_ADMIN_URL
# and EMI_PG_PORT as .ci/postgres.sh reads them.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'dev-run: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-run}
case $cmd in run | migrate | seed | totp) ;; *) die "usage: $0 run|migrate|seed|totp EMAIL" ;; esac

bin=${EMI_BIN:-bin/emi}
[ -x "$bin" ] || die "$bin is missing: run make build"
db=${EMI_DB_NAME:-emi}
[[ $db =~ ^[a-z_][a-z0-9_]*$ ]] || die "EMI_DB_NAME must be a plain lowercase identifier, not '$db'"

# psql comes with Debian's postgresql package, which .ci/postgres.sh installs.
admin=$(bash .ci/postgres.sh)
psql=$(command -v psql || ls -d /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$psql" ] || die "psql is missing: apt-get install postgresql-client"
sql() { "$psql" "$admin" -X -q -v ON_ERROR_STOP=1 -tAc "$1"; }

base=${admin%%\?*}
query=${admin#"$base"}
export DATABASE_URL="${base%/*}/$db$query"

mkdir -p .dev
chmod 700 .dev
db_exists=$(sql "SELECT count(*) FROM pg_database WHERE datname = '$db'")

# The key must outlive the database it seals: a database left from a lost key
# holds secrets nobody can open any more.
if [ ! -s .dev/master.key ]; then
  if [ "$db_exists" = 1 ]; then
    die "database $db exists but .dev/master.key is missing, so the secrets sealed in it cannot be opened.
  Drop it to start afresh:  $psql '$admin' -c 'DROP DATABASE $db WITH (FORCE)'
  or use another database:  EMI_DB_NAME=emi2 make run"
  fi
  (umask 077 && head -c 32 /dev/urandom | base64 >.dev/master.key)
  log "created a development master key in .dev/master.key"
fi
EMI_MASTER_KEY=$(cat .dev/master.key)
export EMI_MASTER_KEY

if [ "$db_exists" != 1 ]; then
  sql "CREATE DATABASE $db" >/dev/null
  rm -f .dev/partner.json # credentials of a database that is gone
  log "created database $db"
fi

export EMI_MODE=sandbox
export EMI_ADDR=${EMI_ADDR:-127.0.0.1:8080}
host=${EMI_ADDR%:*}
port=${EMI_ADDR##*:}
case $host in "" | 0.0.0.0 | "[::]") host=127.0.0.1 ;; esac
url="http://$host:$port"
export EMI_PUBLIC_URL=${EMI_PUBLIC_URL:-$url}
export EMI_LOG_FORMAT=${EMI_LOG_FORMAT:-text}

case $cmd in
  migrate) exec "$bin" migrate ;;
  seed) exec "$bin" seed ;;
  totp) exec "$bin" staff totp --email "${2:-admin@sandbox.emi}" ;;
esac

"$bin" migrate
"$bin" seed

field() { sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p' .dev/partner.json; }

if [ ! -s .dev/partner.json ] || [ -z "$(field api_secret)" ]; then
  (umask 077 && "$bin" partner create --name "Demo Partner" \
    --webhook-url http://127.0.0.1:9999/webhooks --json >.dev/partner.json.tmp)
  mv .dev/partner.json.tmp .dev/partner.json
  log "created the demo partner; its credentials are kept in .dev/partner.json"
fi
api_key=$(field api_key)
api_secret=$(field api_secret)

cat <<EOF

emi (sandbox) will serve on $url   (public URL $EMI_PUBLIC_URL)
  back office: $url/backoffice/
  health:      curl -fsS $url/healthz
  database:    $DATABASE_URL

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
  webhook_secret: $(field webhook_secret)   (webhooks go to http://127.0.0.1:9999/webhooks)

A signed request to GET /v2/partner (operation partner_details). Paste it as it is: it
signs with the current time, and x-timestamp must be within 15 s of the server's clock.

  key='$api_key' secret='$api_secret'
  ts=\$(date +%s)
  hash=\$(printf '%s' "\$key\$ts" partner_details | openssl dgst -sha256 -hmac "\$secret" | sed 's/^.*= //')
  curl -sS -H "x-api-key: \$key" -H "x-timestamp: \$ts" -H "x-hash: \$hash" $url/v2/partner

An AML check of a listed person (answers 18001; the check waits in the back office's
AML review queue for compliance@sandbox.emi). The signed body has no whitespace:

  body='{"first_name":"Kim","last_name":"Jong Un","nationality":"KP","birthday":"1984-01-08"}'
  ts=\$(date +%s)
  hash=\$(printf '%s' "\$key\$ts" aml_check "\$body" | openssl dgst -sha256 -hmac "\$secret" | sed 's/^.*= //')
  curl -sS -H "x-api-key: \$key" -H "x-timestamp: \$ts" -H "x-hash: \$hash" -H 'content-type: application/json' -d "\$body" $url/v1/aml

EOF
command -v openssl >/dev/null 2>&1 || log "the example needs openssl: apt-get install openssl"

exec "$bin" serve
