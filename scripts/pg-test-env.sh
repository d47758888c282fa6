#!/usr/bin/env bash
# A throwaway PostgreSQL 15 + pgvector cluster on 127.0.0.1 for the test suite.
#
#   scripts/pg-test-env.sh run -- CMD...   install what is missing, start a private cluster (free
#                                          port from 55433), run CMD with
#                                          MEMLOCI_TEST_DATABASE_URL set, stop it, clean up
#   scripts/pg-test-env.sh start           start a cluster on $PGPORT (55432) and leave it
#                                          running (prints the export line for the URL)
#   scripts/pg-test-env.sh stop            stop the cluster `start` left running
#
# Installs system-wide only what is missing, and says what first: Debian's postgresql-15 and
# postgresql-server-dev-15 (scripts/apt-install.sh, as root: the named packages and their
# dependencies, every change listed, no upgrade of an installed package outside CI unless
# MEMLOCI_APT_UPGRADE=1), and pgvector 0.8.0 built from Debian trixie's
# source package (fetched through a private apt config: the system's sources are untouched).
# When already installed this costs ~2 s. Without root and without PostgreSQL it cannot
# install anything: it then runs CMD without a database (the PostgreSQL tests skip), unless
# CI is set, where it fails instead. See STACK.md §3.1 for the timings this is based on.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PGMAJOR="${PGMAJOR:-15}"
PGPORT_FIXED="${PGPORT:-}"
PGPORT="${PGPORT:-55432}"
PGDB="${PGDB:-memtest}"
STATE="${MEMLOCI_PG_STATE:-/tmp/memloci-pg-$PGPORT}"
PGBIN="/usr/lib/postgresql/$PGMAJOR/bin"
PGCONFIG="$PGBIN/pg_config"
# a throw-away cluster on loopback; its password is not a secret (it exists so the
# tests can check that a wrong one is reported without being shown)
PGPASS="memloci-test"
URL="postgresql://postgres:$PGPASS@127.0.0.1:$PGPORT/$PGDB"

say() { echo "pg-test-env: $*" >&2; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

installed() {
  [ -x "$PGBIN/initdb" ] && [ -x "$PGCONFIG" ] &&
    [ -f "$("$PGCONFIG" --includedir-server)/postgres.h" ]
}

has_vector() { [ -x "$PGCONFIG" ] && [ -f "$("$PGCONFIG" --sharedir)/extension/vector.control" ]; }

install() {
  if installed && has_vector; then return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "PostgreSQL $PGMAJOR with pgvector is missing and cannot be installed (needs root + apt-get)"
    return 1
  fi
  local work; work="$(mktemp -d /tmp/pgbuild.XXXXXX)"; chmod 755 "$work"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  if ! installed; then
    # only these and what they depend on; upgrades of installed packages are listed
    # and, outside CI, refused (see apt-install.sh)
    "$(dirname "$0")/apt-install.sh" "the PostgreSQL tests" "postgresql-$PGMAJOR" \
      "postgresql-server-dev-$PGMAJOR" make gcc || return 1
  fi
  if ! has_vector; then
    say "building pgvector from Debian trixie's source package; installing it into $("$PGCONFIG" --sharedir)"
    mkdir -p "$work/apt/lists/partial"
    echo 'deb-src http://deb.debian.org/debian trixie main' >"$work/apt/sources.list"
    local apto=(-o APT::Sandbox::User=root -o "Dir::Etc::SourceList=$work/apt/sources.list"
      -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/apt/lists")
    timeout 300 apt-get "${apto[@]}" update -qq
    (cd "$work" && timeout 300 apt-get "${apto[@]}" source --download-only -qq pgvector)
    tar -xzf "$work"/pgvector_*.orig.tar.gz -C "$work"
    timeout 600 make -C "$work"/pgvector-*/ -s -j"$(nproc)" PG_CONFIG="$PGCONFIG" OPTFLAGS="" \
      with_llvm=no >/dev/null
    make -C "$work"/pgvector-*/ -s install PG_CONFIG="$PGCONFIG" with_llvm=no >/dev/null
  fi
}

start() {
  stop_cluster
  rm -rf "$STATE"; mkdir -p "$STATE/data"; chmod 755 "$STATE"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$STATE/data"; fi
  printf '%s\n' "$PGPASS" > "$STATE/pwfile"; chmod 644 "$STATE/pwfile"
  as_pg "$PGBIN/initdb" -D "$STATE/data" -U postgres --auth-local=trust \
    --auth-host=scram-sha-256 --pwfile="$STATE/pwfile" -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$STATE/pwfile"
  as_pg "$PGBIN/pg_ctl" -D "$STATE/data" -l "$STATE/data/server.log" -w -t 30 \
    -o "-p $PGPORT -c listen_addresses=127.0.0.1 -k $STATE/data -c fsync=off \
-c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null
  PGPASSWORD="$PGPASS" "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 \
    -qc "CREATE DATABASE $PGDB"
  PGPASSWORD="$PGPASS" "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$PGDB" -v ON_ERROR_STOP=1 \
    -qc "CREATE EXTENSION vector"
}

stop_cluster() {
  if [ -f "$STATE/data/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$STATE/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      as_pg "$PGBIN/pg_ctl" -D "$STATE/data" -m immediate -w -t 20 stop >/dev/null 2>&1 || true
  fi
}

cleanup() { stop_cluster; rm -rf "$STATE"; }

case "${1:-}" in
  run)
    shift; [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || { say "usage: $0 run -- CMD..."; exit 2; }
    if [ -n "${MEMLOCI_TEST_DATABASE_URL:-}" ]; then exec "$@"; fi  # a server is given
    if ! install; then
      if [ -n "${CI:-}" ]; then say "CI is set: the PostgreSQL tests must run"; exit 1; fi
      say "running without PostgreSQL: its tests will skip"; exec "$@"
    fi
    # a private cluster: its own folder and a free port, so parallel runs never collide
    STATE="$(mktemp -d /tmp/memloci-pg-run.XXXXXX)"
    if [ -z "${PGPORT_FIXED:-}" ]; then
      for PGPORT in $(seq 55433 55533); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PGPORT") 2>/dev/null || break
      done
    fi
    URL="postgresql://postgres:$PGPASS@127.0.0.1:$PGPORT/$PGDB"
    trap cleanup EXIT
    start
    say "PostgreSQL $PGMAJOR + pgvector on $URL"
    status=0
    MEMLOCI_TEST_DATABASE_URL="$URL" "$@" || status=$?
    exit "$status"
    ;;
  start)
    install
    start
    say "running; stop it with: $0 stop"
    echo "export MEMLOCI_TEST_DATABASE_URL=$URL"
    ;;
  stop) cleanup ;;
  *) say "usage: $0 run -- CMD... | start | stop"; exit 2 ;;
esac
