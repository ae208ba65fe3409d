#!/usr/bin/env bash
# Starts the two servers ghbench measures, owned by this checkout, idempotently:
#   - a PostgreSQL cluster in $GHBENCH_HOME/pg (installed from apt when missing)
#   - a MongoDB-wire server in $GHBENCH_HOME/mongo: a real `mongod` when one is
#     on PATH, otherwise SecantusDB in a venv (no registry ships mongod).
# Prints the connection URLs as `export` lines and writes them to $GHBENCH_HOME/env.
# Remove everything with `just down && rm -rf .ghbench`.
# Usage: scripts/setup.sh [postgres|mongo]   (default: both, and the env files)
set -euo pipefail
which=${1:-all}
case $which in all|postgres|mongo) ;; *) echo "usage: $0 [postgres|mongo]" >&2; exit 2 ;; esac
# root's tools (runuser, apt-get) live in sbin, which a non-login shell's PATH can lack.
export PATH="$PATH:/usr/sbin:/sbin"

repo=$(cd "$(dirname "$0")/.." && pwd)
GHBENCH_HOME=${GHBENCH_HOME:-$repo/.ghbench}
GHBENCH_HOME=$(realpath -m "$GHBENCH_HOME")
# Every path below is absolute; `/` is a directory user postgres may stand in.
cd /
PG_PORT=${GHBENCH_PG_PORT:-54320}
MONGO_PORT=${GHBENCH_MONGO_PORT:-27017}
SECANTUS_VERSION=0.7.0b3
# Settings recorded by every query run; sized for a 24 GiB machine (the paper used
# shared_buffers=12GB, work_mem=1GB on 64 GiB).
PG_SHARED_BUFFERS=${GHBENCH_PG_SHARED_BUFFERS:-2GB}
PG_WORK_MEM=${GHBENCH_PG_WORK_MEM:-256MB}
# Index builds: PostgreSQL's defaults (64MB, 2 workers) sort a year's index in
# many passes on disk; the builds get 1GB and half the cores (at least one, at
# most 8: max_parallel_workers, 8 by default, caps what they can use).
PG_MAINTENANCE_WORK_MEM=${GHBENCH_PG_MAINTENANCE_WORK_MEM:-1GB}
half_cores=$(( $(nproc) / 2 ))
PG_MAINTENANCE_WORKERS=${GHBENCH_PG_MAINTENANCE_WORKERS:-$(( half_cores < 1 ? 1 : half_cores > 8 ? 8 : half_cores ))}
# Where SecantusDB is installed when no mongod is on PATH (a test's own setup reuses the checkout's).
VENV=${GHBENCH_VENV:-$GHBENCH_HOME/venv}

log() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else die "need root to run: $* (install it by hand or run setup as root)"; fi
}

apt_updated=
apt_install() {
    if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
    local port=$1 what=$2 logfile=$3
    for _ in $(seq 1 120); do
        port_open "$port" && return 0
        sleep 0.5
    done
    tail -n 30 "$logfile" >&2 || true
    die "$what did not start listening on 127.0.0.1:$port within 60 s (log: $logfile)"
}

pg_bindir() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null && dirname "$(command -v initdb)" && return 0
    return 1
}

setup_postgres() {
    local bin
    if ! bin=$(pg_bindir); then
        log "installing PostgreSQL from apt"
        apt_install postgresql
        bin=$(pg_bindir) || die "PostgreSQL installed but initdb not found"
    fi
    local dir=$GHBENCH_HOME/pg
    # initdb refuses to run as root: the cluster belongs to the `postgres` user then.
    local run=()
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "user 'postgres' missing; reinstall the postgresql package"
        run=(runuser -u postgres --)
        if [ ! -e "$dir" ] && ! runuser -u postgres -- test -x "$GHBENCH_HOME"; then
            # `postgres` cannot reach the checkout (e.g. under /root): keep the
            # cluster where it can, linked from where users look for it.
            local outside
            outside=/var/lib/ghbench/$(printf '%s' "$repo" | md5sum | cut -c1-12)
            mkdir -p "$outside"
            ln -s "$outside" "$dir"
            log "cluster kept in $outside (linked from $dir): user postgres cannot enter $GHBENCH_HOME"
        fi
    fi
    mkdir -p "$dir/"
    # The server itself must never go through a link it cannot enter.
    dir=$(readlink -f "$dir")
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    local data=$dir/data
    if [ ! -f "$data/PG_VERSION" ]; then
        log "creating PostgreSQL cluster in $data"
        # Locale C: text sorts bytewise, as MongoDB sorts strings, so tie-breaks by
        # name agree across engines.
        "${run[@]}" "$bin/initdb" -D "$data" -U ghbench --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
        echo "include_if_exists = 'ghbench.conf'" | "${run[@]}" tee -a "$data/postgresql.conf" >/dev/null
    fi
    # Rewritten on every setup, so changed ports or memory settings take effect.
    local conf=$data/ghbench.conf before
    before=$(cat "$conf" 2>/dev/null || true)
    "${run[@]}" tee "$conf" >/dev/null <<EOF
# written by scripts/setup.sh on every run; change it with GHBENCH_PG_* variables
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$dir'
shared_buffers = $PG_SHARED_BUFFERS
work_mem = $PG_WORK_MEM
maintenance_work_mem = $PG_MAINTENANCE_WORK_MEM
max_parallel_maintenance_workers = $PG_MAINTENANCE_WORKERS
max_wal_size = 8GB
checkpoint_timeout = 30min
EOF
    grep -q "include_if_exists = 'ghbench.conf'" "$data/postgresql.conf" \
        || echo "include_if_exists = 'ghbench.conf'" | "${run[@]}" tee -a "$data/postgresql.conf" >/dev/null
    if "${run[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1 && [ "$before" != "$(cat "$conf")" ]; then
        log "PostgreSQL settings changed: restarting"
        "${run[@]}" "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
    fi
    if "${run[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        log "PostgreSQL already running"
    else
        port_open "$PG_PORT" && die "port $PG_PORT is taken by another server; set GHBENCH_PG_PORT"
        log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
        "${run[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null \
            || { tail -n 30 "$dir/server.log" >&2; die "PostgreSQL did not start"; }
    fi
    if ! "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U ghbench -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'ghbench'" | grep -q 1; then
        "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U ghbench ghbench
    fi
}

setup_mongo() {
    local dir=$GHBENCH_HOME/mongo
    mkdir -p "$dir/data"
    local pidfile=$dir/server.pid
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && port_open "$MONGO_PORT"; then
        log "MongoDB-wire server already running (pid $(cat "$pidfile"))"
        return
    fi
    port_open "$MONGO_PORT" && die "port $MONGO_PORT is taken by another server; set GHBENCH_MONGO_PORT"
    if command -v mongod >/dev/null; then
        log "starting mongod on 127.0.0.1:$MONGO_PORT"
        mongod --dbpath "$dir/data" --port "$MONGO_PORT" --bind_ip 127.0.0.1 \
            --logpath "$dir/server.log" --pidfilepath "$pidfile" --fork </dev/null >/dev/null 2>&1
    else
        local venv=$VENV
        if [ ! -x "$venv/bin/secantusd-py" ]; then
            log "no mongod on PATH: installing SecantusDB $SECANTUS_VERSION into $venv"
            python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
            python3 -m venv "$venv"
            "$venv/bin/pip" install -q --disable-pip-version-check "secantusdb==$SECANTUS_VERSION"
        fi
        log "starting SecantusDB $SECANTUS_VERSION on 127.0.0.1:$MONGO_PORT"
        # `exec` so the recorded pid is the server's own, and every standard stream
        # redirected so the server holds no pipe of the caller open (a CI job
        # reading this script's output would otherwise never see it end).
        # `setsid`: a session of its own, so a signal to the caller's process
        # group (Ctrl-C on `ghbench bench --cold`, which restarts servers through
        # this script; a killed job) does not take the server down with it.
        (cd "$dir" && exec setsid nohup "$venv/bin/secantusd-py" --host 127.0.0.1 --port "$MONGO_PORT" \
            --storage-path "$dir/data" --standalone </dev/null >"$dir/server.log" 2>&1) &
        echo $! >"$pidfile"
    fi
    wait_port "$MONGO_PORT" "MongoDB-wire server" "$dir/server.log"
}

# What `ghbench bench --cold` needs to restart these servers for true cold runs:
# each server's address, data folder and the command that restarts it (this
# checkout's script, with the settings this setup ran with).
write_servers_json() {
    local pg_data restart
    pg_data=$(readlink -f "$GHBENCH_HOME/pg")/data
    restart="\"env\", \"GHBENCH_HOME=$GHBENCH_HOME\", \"GHBENCH_PG_PORT=$PG_PORT\", \"GHBENCH_MONGO_PORT=$MONGO_PORT\""
    restart+=", \"GHBENCH_PG_SHARED_BUFFERS=$PG_SHARED_BUFFERS\", \"GHBENCH_PG_WORK_MEM=$PG_WORK_MEM\", \"GHBENCH_VENV=$VENV\""
    restart+=", \"bash\", \"$repo/scripts/restart.sh\""
    cat >"$GHBENCH_HOME/servers.json" <<JSON
{
  "written_by": "scripts/setup.sh",
  "servers": [
    {"name": "postgres", "address": "127.0.0.1:$PG_PORT", "data_dir": "$pg_data", "restart": [$restart, "postgres"]},
    {"name": "mongo", "address": "127.0.0.1:$MONGO_PORT", "data_dir": "$GHBENCH_HOME/mongo/data", "restart": [$restart, "mongo"]}
  ]
}
JSON
}

mkdir -p "$GHBENCH_HOME"
# One server only (`scripts/restart.sh` after stopping it): the other stays as it is.
case $which in
    postgres) setup_postgres; exit 0 ;;
    mongo) setup_mongo; exit 0 ;;
esac
setup_postgres
setup_mongo
write_servers_json

env_lines="export DATABASE_URL=postgres://ghbench@127.0.0.1:$PG_PORT/ghbench
export MONGODB_URI=mongodb://127.0.0.1:$MONGO_PORT/ghbench?directConnection=true
export GHBENCH_SERVERS=$GHBENCH_HOME/servers.json"
printf '%s\n' "$env_lines" >"$GHBENCH_HOME/env"
log "servers ready; connection settings also in $GHBENCH_HOME/env"
printf '%s\n' "$env_lines"
