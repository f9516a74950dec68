#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests (no system service): initdb in a temporary directory,
# listening on a unix socket only, stopped and deleted again by `stop`. PostgreSQL refuses to run
# as root, so as root it runs as the user postgres (runuser).
#
#   pg_throwaway.sh start STATEFILE   start one; STATEFILE gets the directory's path
#   pg_throwaway.sh url STATEFILE DB  create database DB (dropped first if it exists) and print
#                                     its URL (postgresql:///DB?host=SOCKETDIR&user=postgres)
#   pg_throwaway.sh bounce STATEFILE S [MODE]  stop it (MODE fast, the default: sessions are
#                                     ended; immediate: no shutdown, crash recovery at the start),
#                                     wait S seconds, start it again (the tests of a database
#                                     going away under load)
#   pg_throwaway.sh stop STATEFILE    stop it and delete the directory and STATEFILE
#
# The binaries are Debian's (/usr/lib/postgresql/VERSION/bin, the newest), or $LDPB_PG_BIN. Their
# absence is a failure, not a skip: scripts/deps.sh installs them.
set -euo pipefail

die() { echo "pg_throwaway.sh: $*" >&2; exit 1; }

bin=${LDPB_PG_BIN:-}
if [ -z "$bin" ]; then
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] && [ -x "$bin/psql" ] ||
  die "PostgreSQL binaries not found (/usr/lib/postgresql/*/bin): run scripts/deps.sh"

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd=${1:-}
state=${2:-}
[ -n "$cmd" ] && [ -n "$state" ] || die "usage: pg_throwaway.sh start|url|bounce|stop STATEFILE [ARG]"

case "$cmd" in
start)
  if [ -f "$state" ]; then "$0" stop "$state" || true; fi
  dir=$(mktemp -d /tmp/ldpb-pg.XXXXXX)
  chmod 0755 "$dir"
  mkdir "$dir/data" "$dir/sock"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/data" "$dir/sock"; fi
  if ! as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 \
      --locale=C >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    die "initdb failed"
  fi
  # Unix socket only; fsync stays on: the tests check what a COMMIT makes durable.
  if ! as_pg "$bin/pg_ctl" -D "$dir/data" -w -t 60 -l "$dir/data/server.log" \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c max_connections=50" \
      start >/dev/null; then
    cat "$dir/data/server.log" >&2 || true
    rm -rf "$dir"
    die "pg_ctl start failed"
  fi
  echo "$dir" >"$state"
  ;;
bounce)
  [ -f "$state" ] || die "no throwaway PostgreSQL: $state is missing (start it first)"
  dir=$(cat "$state")
  mode=${4:-fast}
  [[ "$mode" == fast || "$mode" == immediate ]] || die "bounce: mode fast or immediate expected"
  as_pg "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m "$mode" stop >/dev/null
  sleep "${3:-1}"
  as_pg "$bin/pg_ctl" -D "$dir/data" -w -t 60 -l "$dir/data/server.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c max_connections=50" \
    start >/dev/null
  ;;
url)
  db=${3:-}
  [[ "$db" =~ ^[a-z_][a-z0-9_]{0,40}$ ]] || die "url: a database name [a-z_][a-z0-9_]* expected"
  [ -f "$state" ] || die "no throwaway PostgreSQL: $state is missing (start it first)"
  dir=$(cat "$state")
  PGOPTIONS="-c client_min_messages=warning" as_pg "$bin/psql" -h "$dir/sock" -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  echo "postgresql:///$db?host=$dir/sock&user=postgres"
  ;;
stop)
  [ -f "$state" ] || exit 0
  dir=$(cat "$state")
  case "$dir" in /tmp/ldpb-pg.*) ;; *) die "stop: $state does not name a throwaway directory" ;; esac
  if [ -d "$dir/data" ]; then
    as_pg "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  rm -f "$state"
  ;;
*)
  die "unknown command '$cmd' (start, url, bounce, stop)"
  ;;
esac
