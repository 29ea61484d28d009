#!/usr/bin/env bash
# The docker-compose topology as local processes: one database, two aggregator replicas,
# a fleet of simulated clients dealing batches to both. Loopback only; stops by itself.
#   scripts/fleet-local.sh [CLIENTS [extra simulate flags, e.g. --json]]   (default 100000)
# The database, said on stderr, chosen in this order; if none can be had the script stops
# and says what it tried (it never falls back quietly, and never creates a system user):
#   1. LDPCOLLECT_DATABASE_URL, when set;
#   2. FLEET_DATABASE=sqlite: one SQLite file in a temporary folder, shared by both replicas;
#   3. a fresh database on a running PostgreSQL server, dropped at the end: the server of
#      FLEET_POSTGRES_SERVER (a URL whose role may create databases; default
#      postgresql+psycopg://postgres@127.0.0.1:5432/postgres), when it answers;
#   4. a throwaway cluster in a temporary folder (scripts/postgres.sh): needs initdb and
#      pg_ctl on PATH, and a user other than root (PostgreSQL refuses to run as root).
# FLEET_LOG=1: log mode (docs/log-mode.md): a three-node NATS JetStream cluster of
# nats-server processes on free ports (stores in the temporary folder), the two replicas
# publish to it (serve --log) and two fold workers (ldpcollect fold) write the database;
# simulate waits until the database counts every acknowledged report (folding runs
# seconds behind the uploads), then analyses.
# FLEET_KEEP=1 keeps the temporary folder (logs, stores) for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS="${1:-100000}"
EXTRA=("${@:2}")
LDP="${LDPCOLLECT_BIN:-$PWD/.venv/bin/ldpcollect}"
[ -x "$LDP" ] || LDP=ldpcollect
PY="${LDPCOLLECT_PYTHON:-$PWD/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
SERVER="${FLEET_POSTGRES_SERVER:-postgresql+psycopg://postgres@127.0.0.1:5432/postgres}"
SERVER_DATABASE=""
WORK="$(mktemp -d -t ldpcollect-fleet-XXXXXX)"
PIDS=()
# shellcheck source=scripts/postgres.sh
source scripts/postgres.sh

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pg_throwaway_stop
  [ -z "$SERVER_DATABASE" ] || "$PY" scripts/pg_database.py drop "$SERVER_DATABASE" || true
  [ -n "${FLEET_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "${LDPCOLLECT_DATABASE_URL:-}" ]; then
  :
elif [ "${FLEET_DATABASE:-}" = sqlite ]; then
  export LDPCOLLECT_DATABASE_URL="sqlite:///$WORK/fleet.db"
elif SERVER_DATABASE="$("$PY" scripts/pg_database.py create "$SERVER" 2>"$WORK/server.err")"; then
  export LDPCOLLECT_DATABASE_URL="$SERVER_DATABASE"
elif pg_throwaway_start "$WORK/pg" 2>"$WORK/cluster.err"; then
  export LDPCOLLECT_DATABASE_URL="$PG_THROWAWAY_URL"
else
  {
    echo "fleet: no database; tried:"
    echo "  a database on the server at $SERVER (FLEET_POSTGRES_SERVER): $(cat "$WORK/server.err")"
    echo "  a throwaway cluster: $(cat "$WORK/cluster.err")"
    echo "  or set LDPCOLLECT_DATABASE_URL, or FLEET_DATABASE=sqlite for one SQLite file"
  } >&2
  exit 1
fi
echo "fleet: database ${LDPCOLLECT_DATABASE_URL}" >&2

export LDPCOLLECT_ADMIN_TOKEN="fleet-admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export LDPCOLLECT_ANALYST_TOKEN="fleet-analyst-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export LDPCOLLECT_MIGRATE_ON_STARTUP=false
# a simulated fleet reports far faster than real devices: no upload limit here
export LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION="${LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION:-0}"
"$LDP" migrate >&2

SERVE_LOG=()
if [ "${FLEET_LOG:-}" = 1 ]; then
  NATS="${NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}"
  [ -x "$NATS" ] || { echo "fleet: FLEET_LOG=1 needs nats-server (apt-get install nats-server)" >&2; exit 1; }
  CLIENT_PORTS=(); ROUTE_PORTS=()
  for node in 0 1 2; do CLIENT_PORTS+=("$(free_port)"); ROUTE_PORTS+=("$(free_port)"); done
  ROUTES="$(printf 'nats://127.0.0.1:%s,' "${ROUTE_PORTS[@]}")"
  for node in 0 1 2; do
    mkdir -p "$WORK/nats$node"
    "$NATS" -a 127.0.0.1 -p "${CLIENT_PORTS[$node]}" -n "fleet$node" -js -sd "$WORK/nats$node" \
      --cluster_name fleet --cluster "nats://127.0.0.1:${ROUTE_PORTS[$node]}" \
      --routes "${ROUTES%,}" >"$WORK/nats$node.log" 2>&1 &
    PIDS+=("$!")
  done
  export LDPCOLLECT_LOG_URL="nats://$(printf '127.0.0.1:%s,' "${CLIENT_PORTS[@]}" | sed 's/,$//')"
  echo "fleet: log $LDPCOLLECT_LOG_URL (three JetStream nodes)" >&2
  for worker in 1 2; do
    "$LDP" fold 2>"$WORK/fold$worker.log" &
    PIDS+=("$!")
  done
fi

URLS=()
for replica in 1 2; do
  port="$(free_port)"
  "$LDP" serve --host 127.0.0.1 --port "$port" --log-level warning &
  PIDS+=("$!")
  URLS+=(--url "http://127.0.0.1:$port")
  ready=""
  for _ in $(seq 150); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/readyz')" 2>/dev/null; then
      ready=1; break
    fi
    sleep 0.2
  done
  [ -n "$ready" ] || { echo "fleet: replica $replica did not become ready" >&2; exit 1; }
  echo "fleet: replica $replica on port $port" >&2
done
"$LDP" simulate "${URLS[@]}" --clients "$CLIENTS" "${EXTRA[@]}"
