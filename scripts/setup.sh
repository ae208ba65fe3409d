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
# GHBENCH_MEMORY=SIZE (4GiB, 768MiB): each server starts inside a memory cgroup
# of that size, page cache included and no swap, as on a machine that small
# (needs root). Unset: the whole machine.
MEMORY=${GHBENCH_MEMORY:-}

# shellcheck source=cgroup.sh
. "$repo/scripts/cgroup.sh"
MEMORY_BYTES=
if [ -n "$MEMORY" ]; then
    MEMORY_BYTES=$(size_bytes "$MEMORY") \
        || { echo "[setup] error: GHBENCH_MEMORY=$MEMORY is not a size: write a number and its unit, e.g. 4GiB or 768MiB (GiB and MiB are binary, GB and MB decimal)" >&2; exit 2; }
    # Compared by awk: a size past bash's integers must be refused, not wrap.
    machine_bytes=$(awk '/^MemTotal:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo)
    awk -v b="$MEMORY_BYTES" -v m="$machine_bytes" 'BEGIN { exit !(b <= m) }' \
        || { echo "[setup] error: GHBENCH_MEMORY=$MEMORY is more than this machine's memory ($((machine_bytes >> 20)) MiB): such a limit would hold nothing back" >&2; exit 2; }
    # In whole pages, as the kernel keeps a limit (and as ghbench rounds --memory).
    MEMORY_BYTES=$(( MEMORY_BYTES / 4096 * 4096 ))
    [ "$MEMORY_BYTES" -ge $((64 << 20)) ] \
        || { echo "[setup] error: GHBENCH_MEMORY=$MEMORY is too little to run a server in: give at least 64MiB" >&2; exit 2; }
fi
memory_mb=$(( ${MEMORY_BYTES:-0} >> 20 ))
# Under a limit, each setting not given stands to it as the paper's stood to its
# 64 GiB (shared_buffers 12GB = 3/16, work_mem 1GB = 1/64); PostgreSQL's
# effective_cache_size at half of it (the PostgreSQL wiki's "normal conservative
# setting"), maintenance_work_mem 1/16.
scaled() { [ -n "$MEMORY_BYTES" ] && echo "$(( memory_mb * $1 / $2 ))MB"; }
# Settings recorded by every query run; sized for a 24 GiB machine (the paper used
# shared_buffers=12GB, work_mem=1GB on 64 GiB).
PG_SHARED_BUFFERS=${GHBENCH_PG_SHARED_BUFFERS:-$(scaled 3 16 || echo 2GB)}
PG_WORK_MEM=${GHBENCH_PG_WORK_MEM:-$(scaled 1 64 || echo 256MB)}
PG_EFFECTIVE_CACHE_SIZE=${GHBENCH_PG_EFFECTIVE_CACHE_SIZE:-$(scaled 1 2 || echo 4GB)}
# Index builds: PostgreSQL's defaults (64MB, 2 workers) sort a year's index in
# many passes on disk; the builds get 1GB and half the cores (at least one, at
# most 8: max_parallel_workers, 8 by default, caps what they can use).
PG_MAINTENANCE_WORK_MEM=${GHBENCH_PG_MAINTENANCE_WORK_MEM:-$(scaled 1 16 || echo 1GB)}
# A buffer pool given larger than the limit would have the server killed once it fills.
if [ -n "$MEMORY_BYTES" ]; then
    buffers=$(pg_size_bytes "$PG_SHARED_BUFFERS") \
        || { echo "[setup] error: GHBENCH_PG_SHARED_BUFFERS=$PG_SHARED_BUFFERS is not a PostgreSQL size (e.g. 128MB, 2GB, or a number of 8kB pages)" >&2; exit 2; }
    if awk -v b="$buffers" -v m="$MEMORY_BYTES" 'BEGIN { exit !(b >= m) }'; then
        echo "[setup] error: GHBENCH_PG_SHARED_BUFFERS=$PG_SHARED_BUFFERS does not fit in GHBENCH_MEMORY=$MEMORY: PostgreSQL would be killed for memory once its buffers fill; leave it unset to scale it to the limit" >&2
        exit 2
    fi
fi
# WiredTiger's cache: MongoDB's documented default, the larger of 50% of
# (memory - 1 GB) and 256 MB, of the limit, but never more than half of it
# (256 MB would not fit a smaller limit); unset, the server's own default.
WT_CACHE_MB=${GHBENCH_WT_CACHE_MB:-}
if [ -z "$WT_CACHE_MB" ] && [ -n "$MEMORY_BYTES" ]; then
    WT_CACHE_MB=$(( (memory_mb - 1024) / 2 )); [ "$WT_CACHE_MB" -ge 256 ] || WT_CACHE_MB=256
    [ "$WT_CACHE_MB" -le $(( memory_mb / 2 )) ] || WT_CACHE_MB=$(( memory_mb / 2 ))
fi
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

# Moves this (sub)shell into server $1's memory cgroup of $MEMORY_BYTES, with
# no swap, so the server it starts next runs and is charged inside it. A
# cgroup whose limit changes is made anew (when empty), so its peak and counts
# are about this limit alone; one of the same limit is taken again, so a
# restart for a cold run keeps counting where it was.
enter_memory_limit() {
    [ -n "$MEMORY_BYTES" ] || return 0
    [ "$(id -u)" = 0 ] || die "GHBENCH_MEMORY needs root: the limit is a memory cgroup made under /sys/fs/cgroup (run setup as root, e.g. sudo -E just setup)"
    local name dir v1 v2 mine=$BASHPID
    name=$(cgroup_name "$1")
    v1=$(cgroup_mount memory)
    if [ -n "$v1" ]; then
        dir=$v1/$name
        if [ -d "$dir" ] && [ "$(cat "$dir/memory.limit_in_bytes")" != "$MEMORY_BYTES" ] && [ -z "$(cat "$dir/cgroup.procs")" ]; then
            rmdir "$dir"
        fi
        mkdir -p "$dir" || die "cannot make the memory cgroup $dir"
        # memsw (memory and swap) may never be below the memory limit: raised first, lowered last.
        echo "$MEMORY_BYTES" >"$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
        echo "$MEMORY_BYTES" >"$dir/memory.limit_in_bytes" || die "cannot set the limit of $dir (is more than GHBENCH_MEMORY=$MEMORY in use there?)"
        if [ -e "$dir/memory.memsw.limit_in_bytes" ]; then echo "$MEMORY_BYTES" >"$dir/memory.memsw.limit_in_bytes" || die "cannot turn swap off in $dir"; fi
        echo 0 >"$dir/memory.swappiness" 2>/dev/null || true
        echo "$mine" >"$dir/cgroup.procs" || die "cannot start inside the memory cgroup $dir"
        # Block I/O counted per server where the kernel does.
        local blkio; blkio=$(cgroup_mount blkio)
        if [ -n "$blkio" ] && mkdir -p "$blkio/$name" 2>/dev/null; then echo "$mine" >"$blkio/$name/cgroup.procs" || true; fi
    else
        v2=$(cgroup_mount 2)
        [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" \
            || die "GHBENCH_MEMORY needs a cgroup memory controller, and this machine mounts none (no cgroup v1 'memory', no cgroup v2 offering it)"
        dir=$v2/$name
        if [ -d "$dir" ] && [ "$(cat "$dir/memory.max")" != "$MEMORY_BYTES" ] && [ -z "$(cat "$dir/cgroup.procs")" ]; then
            rmdir "$dir"
        fi
        local parent
        for parent in "$v2" "$v2/ghbench"; do
            mkdir -p "$parent"
            echo "+memory +io" >"$parent/cgroup.subtree_control" 2>/dev/null || echo "+memory" >"$parent/cgroup.subtree_control" \
                || die "cannot hand the memory controller down to $parent's children"
        done
        mkdir -p "$dir" || die "cannot make the memory cgroup $dir"
        echo "$MEMORY_BYTES" >"$dir/memory.max" || die "cannot set the limit of $dir"
        if [ -e "$dir/memory.swap.max" ]; then echo 0 >"$dir/memory.swap.max" || die "cannot turn swap off in $dir"; fi
        echo "$mine" >"$dir/cgroup.procs" || die "cannot start inside the memory cgroup $dir"
    fi
    log "$1 starts inside the memory cgroup $name: $MEMORY of memory, no swap"
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
effective_cache_size = $PG_EFFECTIVE_CACHE_SIZE
maintenance_work_mem = $PG_MAINTENANCE_WORK_MEM
max_parallel_maintenance_workers = $PG_MAINTENANCE_WORKERS
max_wal_size = 8GB
checkpoint_timeout = 30min
EOF
    grep -q "include_if_exists = 'ghbench.conf'" "$data/postgresql.conf" \
        || echo "include_if_exists = 'ghbench.conf'" | "${run[@]}" tee -a "$data/postgresql.conf" >/dev/null
    # A running server cannot be moved under another limit: it is restarted.
    local limited_as="${MEMORY_BYTES:-none}" limit_file=$dir/memory-limit
    if "${run[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1 \
        && { [ "$before" != "$(cat "$conf")" ] || [ "$limited_as" != "$(cat "$limit_file" 2>/dev/null || echo none)" ]; }; then
        log "PostgreSQL settings or memory limit changed: restarting"
        "${run[@]}" "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
    fi
    if "${run[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        log "PostgreSQL already running"
    else
        port_open "$PG_PORT" && die "port $PG_PORT is taken by another server; set GHBENCH_PG_PORT"
        log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
        # (`&&`: under `||`, `set -e` does not stop a failed step.)
        ( enter_memory_limit postgres &&
          "${run[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null ) \
            || { tail -n 30 "$dir/server.log" >&2; die "PostgreSQL did not start"; }
        echo "$limited_as" >"$limit_file"
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
    local limited_as="${MEMORY_BYTES:-none}" limit_file=$dir/memory-limit
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && port_open "$MONGO_PORT"; then
        if [ "$limited_as" = "$(cat "$limit_file" 2>/dev/null || echo none)" ]; then
            log "MongoDB-wire server already running (pid $(cat "$pidfile"))"
            return
        fi
        # A running server cannot be moved under another limit: it is restarted.
        log "MongoDB-wire server's memory limit changed: restarting"
        bash "$repo/scripts/down.sh" mongo >&2
    fi
    echo "$limited_as" >"$limit_file"
    port_open "$MONGO_PORT" && die "port $MONGO_PORT is taken by another server; set GHBENCH_MONGO_PORT"
    if command -v mongod >/dev/null; then
        log "starting mongod on 127.0.0.1:$MONGO_PORT"
        local cache=(); [ -z "$WT_CACHE_MB" ] || cache=(--wiredTigerCacheSizeGB "$(awk -v mb="$WT_CACHE_MB" 'BEGIN { printf "%.2f", mb / 1024 }')")
        ( enter_memory_limit mongo &&
          exec mongod --dbpath "$dir/data" --port "$MONGO_PORT" --bind_ip 127.0.0.1 "${cache[@]}" \
            --logpath "$dir/server.log" --pidfilepath "$pidfile" --fork </dev/null >/dev/null 2>&1 )
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
        local cache=(); [ -z "$WT_CACHE_MB" ] || cache=(--cache-size "${WT_CACHE_MB}M")
        (enter_memory_limit mongo && cd "$dir" && exec setsid nohup "$venv/bin/secantusd-py" --host 127.0.0.1 --port "$MONGO_PORT" \
            --storage-path "$dir/data" --standalone "${cache[@]}" </dev/null >"$dir/server.log" 2>&1) &
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
    restart="\"env\", \"GHBENCH_HOME=$GHBENCH_HOME\", \"GHBENCH_PG_PORT=$PG_PORT\", \"GHBENCH_MONGO_PORT=$MONGO_PORT\", \"GHBENCH_VENV=$VENV\""
    # The settings given, not those scaled to a limit: `ghbench bench --memory`
    # restarts with GHBENCH_MEMORY of its own, and the scaled ones follow it.
    local given
    for given in GHBENCH_PG_SHARED_BUFFERS GHBENCH_PG_WORK_MEM GHBENCH_PG_EFFECTIVE_CACHE_SIZE GHBENCH_PG_MAINTENANCE_WORK_MEM GHBENCH_PG_MAINTENANCE_WORKERS GHBENCH_WT_CACHE_MB; do
        if [ -n "${!given:-}" ]; then restart+=", \"$given=${!given}\""; fi
    done
    # The limit setup ran with, which a restart keeps unless GHBENCH_MEMORY says otherwise.
    restart+=", \"GHBENCH_SETUP_MEMORY=$MEMORY\", \"bash\", \"$repo/scripts/restart.sh\""
    cat >"$GHBENCH_HOME/servers.json" <<JSON
{
  "written_by": "scripts/setup.sh",
  "memory": "$MEMORY",
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
