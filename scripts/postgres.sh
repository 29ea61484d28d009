# shellcheck shell=bash
# Source this file to start and stop a throwaway PostgreSQL cluster on loopback.
#   pg_throwaway_start DIR   -> exports PG_THROWAWAY_URL (postgresql+psycopg://...); returns 1,
#                               saying why on stderr, if initdb/pg_ctl/psql are missing, if
#                               run as root (PostgreSQL refuses to; no user is created for
#                               it), or if the server does not start
#   pg_throwaway_stop        -> stops it (safe to call when nothing was started)
#   free_port                -> prints a TCP port on 127.0.0.1 that was free a moment ago
PG_THROWAWAY_DIR=""

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pg_throwaway_start() {
  local tool
  for tool in initdb pg_ctl psql; do
    command -v "$tool" >/dev/null || { echo "postgres.sh: $tool is not on PATH" >&2; return 1; }
  done
  if [ "$(id -u)" = 0 ]; then
    echo "postgres.sh: initdb refuses to run as root; run as a user instead" >&2
    return 1
  fi
  local dir="$1" port
  port="$(free_port)"
  mkdir -p "$dir"
  if ! initdb -D "$dir/data" -U ldp --auth=trust >"$dir/initdb.log" 2>&1; then
    echo "postgres.sh: initdb failed: $(tail -n 1 "$dir/initdb.log")" >&2
    return 1
  fi
  if ! pg_ctl -D "$dir/data" -o "-k $dir -h 127.0.0.1 -p $port" \
    -l "$dir/data/server.log" -w start >/dev/null; then
    echo "postgres.sh: the server did not start: $(tail -n 1 "$dir/data/server.log")" >&2
    return 1
  fi
  PG_THROWAWAY_DIR="$dir"
  psql -h 127.0.0.1 -p "$port" -U ldp -d postgres -qc "CREATE DATABASE ldpcollect" \
    || { pg_throwaway_stop; return 1; }
  export PG_THROWAWAY_URL="postgresql+psycopg://ldp@127.0.0.1:$port/ldpcollect"
}

pg_throwaway_stop() {
  if [ -n "$PG_THROWAWAY_DIR" ]; then
    pg_ctl -D "$PG_THROWAWAY_DIR/data" -m fast stop >/dev/null 2>&1 || true
    PG_THROWAWAY_DIR=""
  fi
}
