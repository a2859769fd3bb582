#!/usr/bin/env bash
# Runs an emi binary against a streaming standby and stops it with SIGTERM:
# what /healthz answers there, and how long the process takes to stop.
# It reproduces two issue-30 faults on any build, the old one included:
#
#   git worktree add /tmp/old BEFORE && (cd /tmp/old && go build -o /tmp/emi-old ./cmd/emi)
#   .ci/standby-sigterm.sh /tmp/emi-old     # healthz 200, still running 60 s after SIGTERM
#   .ci/standby-sigterm.sh bin/emi          # healthz 503, stopped within EMI_SHUTDOWN_TIMEOUT
#
# The same checks run in CI inside TestFailoverLosesNoAcknowledgedWrite
# (cmd/emi). Usage: .ci/standby-sigterm.sh BIN [PORT] (PORT, PORT+1 and
# PORT+2: primary, standby and emi; default 55401).
set -u
cd "$(dirname "$0")/.."
bin=$(realpath "$1")
P=${2:-55401}
S=$((P + 1))
A=$((P + 2))
dir=$(mktemp -d /var/tmp/emi-sigterm-XXXXXX)
chmod 755 "$dir"
pg() { EMI_PG_PORT=$1 EMI_PG_DATA=$dir/$1 bash .ci/postgres.sh "${@:2}"; }
cleanup() { pg "$S" stop >/dev/null 2>&1; pg "$P" stop >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT
admin=$(pg "$P")
psql=$(command -v psql || ls -d /usr/lib/postgresql/*/bin/psql | sort -V | tail -n 1)
"$psql" "$admin" -qc 'CREATE DATABASE emi'
pg "$S" standby "$P" >/dev/null
EMI_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
export EMI_MASTER_KEY EMI_MODE=sandbox EMI_LOG_LEVEL=warn
primary="postgres://postgres@127.0.0.1:$P/emi?sslmode=disable"
DATABASE_URL=$primary "$bin" migrate >/dev/null
DATABASE_URL=$primary "$bin" seed >/dev/null
sleep 1 # the standby replays the schema
DATABASE_URL="postgres://postgres@127.0.0.1:$S/emi?sslmode=disable" EMI_ADDR=127.0.0.1:$A "$bin" serve >"$dir/serve.log" 2>&1 &
pid=$!
sleep 4
echo "/healthz of an instance on the standby: $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$A/healthz")"
kill -TERM "$pid"
t0=$SECONDS
while kill -0 "$pid" 2>/dev/null; do
  if ((SECONDS - t0 >= 60)); then
    echo "still running 60 s after SIGTERM (killed)"
    kill -9 "$pid"
    exit 1
  fi
  sleep 0.2
done
echo "stopped $((SECONDS - t0)) s after SIGTERM"
