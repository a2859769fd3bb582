#!/usr/bin/env bash
# Makes sure a PostgreSQL server is reachable and prints an admin URL for it
# (a role allowed to CREATE DATABASE) on stdout. Everything else goes to stderr.
#
#   .ci/postgres.sh          ensure a server is up, print its admin URL
#   .ci/postgres.sh stop     stop the local server this script started
#   .ci/postgres.sh crash    stop it as a crash would (pg_ctl -m immediate)
#   .ci/postgres.sh sync     make its commits wait for a standby's flush
#   .ci/postgres.sh standby PRIMARY_PORT
#                            start a streaming standby (pg_basebackup -R) of
#                            the cluster on PRIMARY_PORT, print its URL
#   .ci/postgres.sh promote  promote the standby on EMI_PG_PORT
#
# Order of preference:
#   1. PG_ADMIN_URL, when it answers;
#   2. the project's local cluster (port EMI_PG_PORT, default 54329), started
#      from the installed PostgreSQL binaries, initialised on first use;
#   3. when no PostgreSQL binaries exist: apt-get install postgresql (as root),
#      or stop with the exact command to run.
#
# The local cluster trusts connections from 127.0.0.1 only: it is a development
# and test server, never a production one. PostgreSQL refuses to run as root,
# so as root the cluster belongs to the `postgres` user.
set -euo pipefail

port=${EMI_PG_PORT:-54329}
local_url="postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable"
log() { printf 'postgres.sh: %s\n' "$*" >&2; }

if [ "$(id -u)" = 0 ]; then
  datadir=${EMI_PG_DATA:-/var/tmp/emi-postgres-${port}}
else
  datadir=${EMI_PG_DATA:-${XDG_STATE_HOME:-$HOME/.local/state}/emi/postgres-${port}}
fi

# answers URL: true when something accepts TCP connections at the URL's host:port.
answers() {
  local rest hostport host p
  rest=${1#*://}; rest=${rest#*@}; hostport=${rest%%/*}; hostport=${hostport%%\?*}
  host=${hostport%:*}; p=${hostport##*:}
  [ "$host" = "$hostport" ] && p=5432
  [ -z "$host" ] && host=127.0.0.1
  (exec 3<>"/dev/tcp/${host}/${p}") 2>/dev/null
}

find_bindir() {
  local d
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v pg_ctl)")"; return 0; fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  return 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${1:-}" = stop ]; then
  if bindir=$(find_bindir) && [ -f "$datadir/PG_VERSION" ]; then
    as_owner "$bindir/pg_ctl" -D "$datadir" -m fast stop >&2 || true
  fi
  exit 0
fi

# The topology tests (issue 30): a crash, a streaming standby, a promote.
case "${1:-}" in
crash)
  # Stops the server as a crash would (SIGQUIT to every process: no
  # checkpoint, connections cut; recovery replays the WAL at the next start).
  bindir=$(find_bindir)
  as_owner "$bindir/pg_ctl" -D "$datadir" -m immediate stop >&2 || true
  exit 0
  ;;
sync)
  # Makes commits on this server wait until a standby has flushed them
  # (synchronous_standby_names = '*'): what a primary needs for a failover
  # that loses no acknowledged write.
  bindir=$(find_bindir)
  printf "synchronous_standby_names = '*'\n" >>"$datadir/postgresql.conf"
  as_owner "$bindir/pg_ctl" -D "$datadir" reload >&2
  exit 0
  ;;
standby)
  # .ci/postgres.sh standby PRIMARY_PORT: a streaming standby of the local
  # cluster on PRIMARY_PORT, made with pg_basebackup -R, on EMI_PG_PORT in
  # EMI_PG_DATA; prints its URL.
  primary=${2:?usage: postgres.sh standby PRIMARY_PORT}
  bindir=$(find_bindir)
  if [ ! -f "$datadir/PG_VERSION" ]; then
    mkdir -p "$datadir"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$datadir"; chmod 700 "$datadir"; fi
    as_owner "$bindir/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$datadir" -R -X stream -c fast >&2
    printf "port = %s\n" "$port" >>"$datadir/postgresql.conf"
  fi
  log "starting a standby of 127.0.0.1:${primary} on 127.0.0.1:${port} ($datadir)"
  as_owner "$bindir/pg_ctl" -D "$datadir" -l "$datadir/server.log" -w -t 60 -o "-c max_connections=1000" start >&2 \
    || { tail -20 "$datadir/server.log" >&2 || true; exit 1; }
  echo "$local_url"
  exit 0
  ;;
promote)
  bindir=$(find_bindir)
  as_owner "$bindir/pg_ctl" -D "$datadir" -w -t 60 promote >&2
  exit 0
  ;;
esac

if [ -n "${PG_ADMIN_URL:-}" ] && answers "$PG_ADMIN_URL"; then
  echo "$PG_ADMIN_URL"; exit 0
fi
if answers "$local_url"; then echo "$local_url"; exit 0; fi

if ! bindir=$(find_bindir); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "PostgreSQL is not installed: installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # policy-rc.d keeps the package from starting its own cluster on 5432.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    apt-get install -y -qq postgresql >&2 || { rm -f /usr/sbin/policy-rc.d; exit 1; }
    rm -f /usr/sbin/policy-rc.d
    bindir=$(find_bindir) || { log "postgresql installed but pg_ctl not found"; exit 1; }
  else
    log "PostgreSQL server binaries are missing. Install them, e.g.: sudo apt-get install postgresql"
    log "or set PG_ADMIN_URL to a server where this role may CREATE DATABASE."
    exit 1
  fi
fi

if [ ! -f "$datadir/PG_VERSION" ]; then
  log "initialising a local cluster in $datadir"
  mkdir -p "$datadir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$datadir"; chmod 700 "$datadir"; fi
  as_owner "$bindir/initdb" -D "$datadir" -U postgres -A trust -E UTF8 --locale=C.UTF-8 -N >"$datadir.initdb.log" 2>&1 \
    || { cat "$datadir.initdb.log" >&2; exit 1; }
  cat >>"$datadir/postgresql.conf" <<CONF
# emi development and test cluster
listen_addresses = '127.0.0.1'
port = ${port}
unix_socket_directories = ''
shared_buffers = 256MB
CONF
fi

log "starting PostgreSQL on 127.0.0.1:${port} ($datadir)"
# max_connections on the command line, so a cluster initialised by an older
# script gets it too: make test runs two packages at once, each with up to
# four parallel tests whose applications open pools of up to 40
# connections (plus the servers cmd/emi's tests start); at 300 a busy run
# reached "too many clients" (53300), which the API answered 500 before
# issue 29 and answers 503 / 10503 now. 1,000 costs about 40 MB of shared
# memory here.
as_owner "$bindir/pg_ctl" -D "$datadir" -l "$datadir/server.log" -w -t 60 -o "-c max_connections=1000" start >&2 \
  || { tail -20 "$datadir/server.log" >&2 || true; exit 1; }
echo "$local_url"
