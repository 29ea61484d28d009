#!/usr/bin/env bash
# The docker-compose topology as local processes: one database, two aggregator replicas,
# a fleet of simulated clients dealing batches to both. Loopback only; stops by itself.
#   scripts/fleet-local.sh [CLIENTS [extra simulate flags, e.g. --json]]   (default 100000)
# Uses PostgreSQL when initdb and pg_ctl are on PATH (a throwaway cluster in a temporary
# folder, scripts/postgres.sh), otherwise one SQLite file shared by both replicas.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS="${1:-100000}"
EXTRA=("${@:2}")
LDP="${LDPCOLLECT_BIN:-$PWD/.venv/bin/ldpcollect}"
[ -x "$LDP" ] || LDP=ldpcollect
WORK="$(mktemp -d -t ldpcollect-fleet-XXXXXX)"
PIDS=()
# shellcheck source=scripts/postgres.sh
source scripts/postgres.sh

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pg_throwaway_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

if pg_throwaway_start "$WORK/pg"; then
  export LDPCOLLECT_DATABASE_URL="$PG_THROWAWAY_URL"
else
  export LDPCOLLECT_DATABASE_URL="sqlite:///$WORK/fleet.db"
fi
echo "fleet: database ${LDPCOLLECT_DATABASE_URL}" >&2

export LDPCOLLECT_ADMIN_TOKEN="fleet-admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export LDPCOLLECT_ANALYST_TOKEN="fleet-analyst-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export LDPCOLLECT_MIGRATE_ON_STARTUP=false
# a simulated fleet reports far faster than real devices: no upload limit here
export LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION="${LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION:-0}"
"$LDP" migrate >&2

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
