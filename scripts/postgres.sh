# shellcheck shell=bash
# Source this file to start and stop a throwaway PostgreSQL cluster on loopback.
#   pg_throwaway_start DIR   -> exports PG_THROWAWAY_URL (postgresql+psycopg://...); returns 1 if
#                               initdb/pg_ctl are missing or the server does not start
#   pg_throwaway_stop        -> stops it (safe to call when nothing was started)
#   free_port                -> prints a TCP port on 127.0.0.1 that was free a moment ago
PG_THROWAWAY_DIR=""
PG_THROWAWAY_AS=()

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pg_throwaway_start() {
  command -v initdb >/dev/null && command -v pg_ctl >/dev/null && command -v psql >/dev/null || return 1
  local dir="$1" port
  port="$(free_port)"
  mkdir -p "$dir"
  PG_THROWAWAY_AS=()
  if [ "$(id -u)" = 0 ]; then  # PostgreSQL refuses to run as root
    id ldpcollect-pg >/dev/null 2>&1 || useradd --system --no-create-home ldpcollect-pg || return 1
    chown ldpcollect-pg "$dir"
    PG_THROWAWAY_AS=(runuser -u ldpcollect-pg --)
  fi
  "${PG_THROWAWAY_AS[@]}" initdb -D "$dir/data" -U ldp --auth=trust >/dev/null || return 1
  "${PG_THROWAWAY_AS[@]}" pg_ctl -D "$dir/data" -o "-k $dir -h 127.0.0.1 -p $port" \
    -l "$dir/data/server.log" -w start >/dev/null || return 1
  PG_THROWAWAY_DIR="$dir"
  "${PG_THROWAWAY_AS[@]}" psql -h 127.0.0.1 -p "$port" -U ldp -d postgres -qc \
    "CREATE DATABASE ldpcollect" || { pg_throwaway_stop; return 1; }
  export PG_THROWAWAY_URL="postgresql+psycopg://ldp@127.0.0.1:$port/ldpcollect"
}

pg_throwaway_stop() {
  if [ -n "$PG_THROWAWAY_DIR" ]; then
    "${PG_THROWAWAY_AS[@]}" pg_ctl -D "$PG_THROWAWAY_DIR/data" -m fast stop >/dev/null 2>&1 || true
    PG_THROWAWAY_DIR=""
  fi
}
