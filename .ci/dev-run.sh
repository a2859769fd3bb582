#!/usr/bin/env bash
# The development environment behind `make run`, `make migrate` and
# `make seed` (contract §10), run from the project's root:
#
#   .ci/dev-run.sh run       migrate, seed, create the demo partner once,
#                            print the URL, credentials and signed curl
#                            examples (.ci/dev-banner.sh), then exec `emi serve`
#   .ci/dev-run.sh migrate   emi migrate
#   .ci/dev-run.sh seed      emi seed
#
# It brings up the local PostgreSQL with .ci/postgres.sh (installing it when
# root), creates the database EMI_DB_NAME (default emi) when missing, and keeps
# a development master key in .dev/master.key (git-ignored, created once,
# never printed). The demo partner's credentials live in .dev/partner.json.
#
# Environment: EMI_BIN (bin/emi), EMI_ADDR (127.0.0.1:8080), WEBHOOK_URL
# (the demo partner's endpoint at its creation; default EMI_ADDR's port + 1), EMI_PUBLIC_URL
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
# The demo partner's webhooks go to WEBHOOK_URL, by default the port after
# EMI_ADDR's on the same host (8081 beside 8080), where
# `bin/emi webhooks listen` receives them; two checkouts on 8080 and 8090
# then do not share a receiver (it was a fixed 127.0.0.1:9999).
WEBHOOK_URL=${WEBHOOK_URL:-http://$host:$((port + 1))/webhooks}
# The sandbox delivers to loopback only on EMI_SANDBOX_WEBHOOK_PORTS (by
# default EMI_ADDR's port + 1 and 9999, emi webhooks listen's default): a
# WEBHOOK_URL on another port is added to them.
hook_port=$(printf '%s\n' "$WEBHOOK_URL" | sed -n 's|^[a-z]*://[^/]*:\([0-9][0-9]*\).*|\1|p')
if [ -z "${EMI_SANDBOX_WEBHOOK_PORTS:-}" ] && [ -n "$hook_port" ] && [ "$hook_port" != $((port + 1)) ] && [ "$hook_port" != 9999 ]; then
  export EMI_SANDBOX_WEBHOOK_PORTS="$((port + 1)),9999,$hook_port"
fi
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
  # Partner names are unique (ignoring case): when the database already has
  # a "Demo Partner" whose secret was lost with .dev/, the new one is named
  # after the time instead.
  demo="Demo Partner"
  if ! (umask 077 && "$bin" partner create --name "$demo" \
    --webhook-url "$WEBHOOK_URL" --json >.dev/partner.json.tmp 2>.dev/partner.err); then
    grep -q 'already the name of another partner' .dev/partner.err || { cat .dev/partner.err >&2; exit 1; }
    demo="Demo Partner $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    (umask 077 && "$bin" partner create --name "$demo" \
      --webhook-url "$WEBHOOK_URL" --json >.dev/partner.json.tmp)
  fi
  rm -f .dev/partner.err
  mv .dev/partner.json.tmp .dev/partner.json
  printf '%s\n' "$WEBHOOK_URL" >.dev/webhook_url
  log "created the demo partner; its credentials are kept in .dev/partner.json"
fi
# The URL, logins, credentials and examples: one script, which
# TestReadmeAndMakeRunExamples also runs (and then runs every example it prints).
# The demo partner keeps the endpoint it was created with (a partner made
# before WEBHOOK_URL existed has 127.0.0.1:9999).
hooks=$(cat .dev/webhook_url 2>/dev/null || echo http://127.0.0.1:9999/webhooks)
bash .ci/dev-banner.sh "$url" "$EMI_PUBLIC_URL" "$DATABASE_URL" "$hooks"
command -v openssl >/dev/null 2>&1 || log "the examples need openssl: apt-get install openssl"

exec "$bin" serve
