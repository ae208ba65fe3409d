#!/usr/bin/env bash
# Stops the servers `scripts/setup.sh` started; their data stays in $GHBENCH_HOME.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
GHBENCH_HOME=${GHBENCH_HOME:-$repo/.ghbench}

data=$GHBENCH_HOME/pg/data
if [ -f "$data/postmaster.pid" ]; then
    for bin in /usr/lib/postgresql/*/bin; do [ -x "$bin/pg_ctl" ] && break; done
    if [ "$(id -u)" = 0 ]; then run=(runuser -u postgres --); else run=(); fi
    "${run[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null && echo "[down] PostgreSQL stopped"
fi
pidfile=$GHBENCH_HOME/mongo/server.pid
if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        echo "[down] MongoDB-wire server stopped"
    fi
    rm -f "$pidfile"
fi
