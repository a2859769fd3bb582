#!/usr/bin/env bash
# Starts Debian's PgBouncer in transaction mode in front of the project's
# PostgreSQL cluster (.ci/postgres.sh) and prints the admin URL through it on
# stdout; everything else goes to stderr. The topology tests (issue 30) run
# emi through it, as a payments team's deployment would.
#
#   .ci/pgbouncer.sh          ensure it runs, print postgres://postgres@127.0.0.1:PORT/postgres
#   .ci/pgbouncer.sh stop     stop it
#
# EMI_PGBOUNCER_PORT (default 54331) is where it listens; EMI_PG_PORT
# (default 54329) the cluster it pools; EMI_PGBOUNCER_POOL (default 10)
# the server connections per database, far fewer than the clients, so that
# client connections really share server connections. Any database name
# is passed through (the tests create one per test). It trusts 127.0.0.1,
# like the cluster: a test setup, never a production one. As root it runs
# as the `postgres` user; PgBouncer refuses root. Installs the Debian
# package when missing and run as root.
set -euo pipefail

port=${EMI_PGBOUNCER_PORT:-54331}
pgport=${EMI_PG_PORT:-54329}
pghost=${EMI_PG_HOST:-127.0.0.1}
pool=${EMI_PGBOUNCER_POOL:-10}
log() { printf 'pgbouncer.sh: %s\n' "$*" >&2; }
if [ "$(id -u)" = 0 ]; then
  dir=/var/tmp/emi-pgbouncer-${port}
else
  dir=${XDG_STATE_HOME:-$HOME/.local/state}/emi/pgbouncer-${port}
fi
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
url="postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable"

if [ "${1:-}" = stop ]; then
  if [ -f "$dir/pgbouncer.pid" ]; then
    kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
    for _ in $(seq 50); do [ -f "$dir/pgbouncer.pid" ] && kill -0 "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || break; sleep 0.1; done
  fi
  exit 0
fi

if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then echo "$url"; exit 0; fi

bin=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null || true)
if [ -z "$bin" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "PgBouncer is not installed: installing Debian's pgbouncer package"
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d keeps the package from starting its own service.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    { apt-get install -y -qq --no-install-recommends pgbouncer >&2 || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends pgbouncer >&2; }; } \
      || { rm -f /usr/sbin/policy-rc.d; exit 1; }
    rm -f /usr/sbin/policy-rc.d
    bin=/usr/sbin/pgbouncer
  else
    log "PgBouncer is missing. Install it, e.g.: sudo apt-get install pgbouncer"
    exit 1
  fi
fi

mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres: "$dir"
cat >"$dir/pgbouncer.ini" <<INI
; emi topology tests (issue 30): transaction pooling, as managed poolers do.
[databases]
* = host=${pghost} port=${pgport} user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = ${pool}
max_client_conn = 5000
max_db_connections = 0
; lib/pq sends extra_float_digits at start-up.
ignore_startup_parameters = extra_float_digits
logfile = ${dir}/pgbouncer.log
pidfile = ${dir}/pgbouncer.pid
log_connections = 0
log_disconnections = 0
INI
[ "$(id -u)" = 0 ] && chown postgres: "$dir/pgbouncer.ini"
log "starting PgBouncer (transaction mode, $pool server connections per database) on 127.0.0.1:${port} before ${pghost}:${pgport}"
as_owner "$bin" -d "$dir/pgbouncer.ini" >&2 || { tail -20 "$dir/pgbouncer.log" >&2 || true; exit 1; }
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then echo "$url"; exit 0; fi
  sleep 0.1
done
log "PgBouncer did not start listening on ${port}"; tail -20 "$dir/pgbouncer.log" >&2 || true
exit 1
