#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, the crash test and the bench.
#
#   scripts/pg-cluster.sh start   install PostgreSQL when missing (Debian, as root), initdb a new
#                                 cluster in a temporary folder, start it on a free loopback port
#                                 with fsync and synchronous_commit on, create role and database
#                                 `ledger`, and print `export LEDGER_TEST_PG_URL=…`
#   scripts/pg-cluster.sh env     print the export line again (for `eval "$(… env)"`)
#   scripts/pg-cluster.sh stop    stop the cluster and remove its folder
#   scripts/pg-cluster.sh crash   stop it in immediate mode (as a crash would), keeping its data
#   scripts/pg-cluster.sh resume  start it again on its data (crash recovery), same port
#
# The cluster lives in $LEDGER_PG_DIR (default: $TMPDIR/ledger-pg). PostgreSQL refuses to run as
# root, so as root the cluster belongs to the `postgres` user (created by the Debian package).
# The role `ledger` may create databases: the test harness gives each test file its own.
set -euo pipefail

STATE_DIR="${LEDGER_PG_DIR:-${TMPDIR:-/tmp}/ledger-pg}"
DATA_DIR="$STATE_DIR/data"
ENV_FILE="$STATE_DIR/env"
ROLE=ledger
PASSWORD=ledger
DATABASE=ledger

log() { printf 'pg-cluster: %s\n' "$*" >&2; }

# The newest installed server's bin folder (Debian keeps them under /usr/lib/postgresql/<ver>).
find_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$dir" && -x "$dir/initdb" ]]; then
    printf '%s\n' "$dir"
  elif command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
  fi
}

install_postgres() {
  if [[ $(id -u) -ne 0 ]]; then
    log "PostgreSQL is not installed; install it (apt-get install postgresql) or run as root"
    exit 1
  fi
  log "installing PostgreSQL (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
}

# Runs a command as the cluster's owner: `postgres` when we are root, else ourselves.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

print_env() {
  cat "$ENV_FILE"
}

start() {
  local bin
  bin=$(find_bin)
  if [[ -z "$bin" ]]; then
    install_postgres
    bin=$(find_bin)
  fi
  [[ -n "$bin" ]] || { log "no initdb found after installing PostgreSQL"; exit 1; }
  # Reused only when its server answers: a folder copied from another machine, or left by a
  # session whose processes have ended, has a postmaster.pid but nothing listening.
  if [[ -f "$ENV_FILE" ]] && [[ -f "$DATA_DIR/postmaster.pid" ]]; then
    if as_owner "$bin/pg_ctl" -D "$DATA_DIR" status >/dev/null 2>&1 &&
      "$bin/pg_isready" -q -h "$STATE_DIR" -p "$(sed -n 's/^port = //p' "$DATA_DIR/postgresql.conf" | tail -n 1)"; then
      log "already running in $STATE_DIR"
      print_env
      return
    fi
    log "a stale cluster in $STATE_DIR (its server is not running): starting a new one"
  fi
  rm -rf "$STATE_DIR"
  mkdir -p "$STATE_DIR"
  chmod 755 "$STATE_DIR"
  [[ $(id -u) -eq 0 ]] && chown postgres "$STATE_DIR"
  local pwfile="$STATE_DIR/pw"
  printf '%s\n' "$PASSWORD" >"$pwfile"
  [[ $(id -u) -eq 0 ]] && chown postgres "$pwfile"
  as_owner "$bin/initdb" -D "$DATA_DIR" -U postgres --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  local port
  port=$(free_port)
  # Durability as in production (the crash test relies on it); enough connections for several
  # service processes with their pools, plus the tests' own.
  cat >>"$DATA_DIR/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$STATE_DIR'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 300
shared_buffers = 128MB
# Per-statement counts and timings for profiling (the bench reads them when the extension exists).
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
EOF
  as_owner "$bin/pg_ctl" -D "$DATA_DIR" -l "$STATE_DIR/postgres.log" -w -t 60 start >/dev/null
  as_owner "$bin/psql" -h "$STATE_DIR" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 <<EOF
CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD';
CREATE DATABASE $DATABASE OWNER $ROLE;
EOF
  cat >"$ENV_FILE" <<EOF
export LEDGER_TEST_PG_URL=postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DATABASE
export LEDGER_PG_BIN=$bin
export LEDGER_PG_DATA=$DATA_DIR
EOF
  log "PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') running on 127.0.0.1:$port ($STATE_DIR)"
  print_env
}

stop() {
  if [[ -d "$DATA_DIR" ]]; then
    local bin
    bin=$(find_bin)
    as_owner "$bin/pg_ctl" -D "$DATA_DIR" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$STATE_DIR"
  log "stopped and removed $STATE_DIR"
}

# pg_ctl on the running cluster's data folder.
ctl() {
  [[ -d "$DATA_DIR" ]] || { log "no cluster in $STATE_DIR"; exit 1; }
  as_owner "$(find_bin)/pg_ctl" -D "$DATA_DIR" -l "$STATE_DIR/postgres.log" "$@" >/dev/null
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  crash) ctl -m immediate -w stop ;;
  resume) ctl -w -t 60 start ;;
  env)
    [[ -f "$ENV_FILE" ]] || { log "no cluster running in $STATE_DIR"; exit 1; }
    print_env
    ;;
  *)
    echo "usage: $0 start|stop|env|crash|resume" >&2
    exit 2
    ;;
esac
