#!/usr/bin/env bash
# Starts the three servers ghbench measures, owned by this checkout, idempotently:
#   - a PostgreSQL cluster in $GHBENCH_HOME/pg (installed from apt when missing)
#   - a MongoDB-wire server in $GHBENCH_HOME/mongo: a real `mongod` when one is
#     on PATH, otherwise SecantusDB in a venv (no registry ships mongod).
#   - a MySQL-family server in $GHBENCH_HOME/mysql: a real MySQL 8 when its
#     `mysqld` is on PATH, otherwise MariaDB (installed from apt when missing).
# Prints the connection URLs as `export` lines and writes them to $GHBENCH_HOME/env.
# Remove everything with `just down && rm -rf .ghbench`.
# Usage: scripts/setup.sh [postgres|mongo|mysql]   (default: all three, and the env files)
set -euo pipefail
which=${1:-all}
case $which in all|postgres|mongo|mysql) ;; *) echo "usage: $0 [postgres|mongo|mysql]" >&2; exit 2 ;; esac
# root's tools (runuser, apt-get) live in sbin, which a non-login shell's PATH can lack.
export PATH="$PATH:/usr/sbin:/sbin"

repo=$(cd "$(dirname "$0")/.." && pwd)
GHBENCH_HOME=${GHBENCH_HOME:-$repo/.ghbench}
GHBENCH_HOME=$(realpath -m "$GHBENCH_HOME")
# Every path below is absolute; `/` is a directory user postgres may stand in.
cd /
PG_PORT=${GHBENCH_PG_PORT:-54320}
MONGO_PORT=${GHBENCH_MONGO_PORT:-27017}
MYSQL_PORT=${GHBENCH_MYSQL_PORT:-33306}
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
# InnoDB's buffer pool: the same MiB as WiredTiger's cache. For fairness the
# MySQL family's document store gets the cache MongoDB's engine gets by its
# vendor's default (InnoDB's own default, 128 MiB, is sized for a small shared
# host, not a database's machine). Unset and under no limit, that default is
# worked out here as mongod works it out: the larger of 50% of (memory -
# 1 GiB) and 256 MiB. GHBENCH_MYSQL_BUFFER_POOL (e.g. 2G, 512M) sets it outright.
if [ -n "${GHBENCH_MYSQL_BUFFER_POOL:-}" ]; then
    MYSQL_BUFFER_POOL=$GHBENCH_MYSQL_BUFFER_POOL
elif [ -n "$WT_CACHE_MB" ]; then
    MYSQL_BUFFER_POOL=${WT_CACHE_MB}M
else
    machine_mb=$(awk '/^MemTotal:/ { printf "%d\n", $2 / 1024 }' /proc/meminfo)
    pool_mb=$(( (machine_mb - 1024) / 2 )); [ "$pool_mb" -ge 256 ] || pool_mb=256
    MYSQL_BUFFER_POOL=${pool_mb}M
fi
pool_bytes=$(mysql_size_bytes "$MYSQL_BUFFER_POOL") \
    || { echo "[setup] error: GHBENCH_MYSQL_BUFFER_POOL=$MYSQL_BUFFER_POOL is not a MySQL size (a number of bytes, or one with K, M, G or T after it, e.g. 512M or 2G)" >&2; exit 2; }
# As PostgreSQL's buffers: a pool larger than the limit would have the server killed once it fills.
# Checked only when MariaDB is set up: restarting another server under a limit
# (`restart.sh postgres` for `bench --memory`) must not fail on its setting.
if [ "$which" != postgres ] && [ "$which" != mongo ] && [ -n "$MEMORY_BYTES" ] && awk -v b="$pool_bytes" -v m="$MEMORY_BYTES" 'BEGIN { exit !(b >= m) }'; then
    echo "[setup] error: GHBENCH_MYSQL_BUFFER_POOL=$MYSQL_BUFFER_POOL does not fit in GHBENCH_MEMORY=$MEMORY: MySQL would be killed for memory once its buffer pool fills; leave it unset to scale it to the limit" >&2
    exit 2
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

# $4, when given: the server's pid, so one that ended is said at once, not after 60 s.
wait_port() {
    local port=$1 what=$2 logfile=$3 pid=${4:-}
    for _ in $(seq 1 120); do
        port_open "$port" && return 0
        # A zombie's command line is empty: it ended too.
        if [ -n "$pid" ] && ! grep -qa . "/proc/$pid/cmdline" 2>/dev/null; then
            tail -n 30 "$logfile" >&2 || true
            die "$what ended before it listened on 127.0.0.1:$port${MEMORY:+ (under GHBENCH_MEMORY=$MEMORY: a log that stops short means the kernel killed it for memory)} (log: $logfile)"
        fi
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

# The MySQL-family server to run: MySQL 8 (or later) when its `mysqld` is on
# PATH, otherwise MariaDB (Debian's `mysqld` is MariaDB's, under another name),
# installed from apt when missing. Sets mysql_flavor (mysql or mariadb),
# mysql_server, mysql_client and mysql_version.
find_mysql() {
    local mysqld major
    if mysqld=$(command -v mysqld) && mysql_version=$("$mysqld" --version 2>/dev/null) && ! grep -qi mariadb <<<"$mysql_version"; then
        major=$(sed -nE 's/.* Ver ([0-9]+)\..*/\1/p' <<<"$mysql_version")
        if [ "${major:-0}" -ge 8 ]; then
            mysql_flavor=mysql mysql_server=$mysqld
            mysql_client=$(dirname "$mysqld")/mysql
            [ -x "$mysql_client" ] || mysql_client=$(command -v mysql) \
                || die "MySQL's client (mysql) is neither beside $mysqld nor on PATH"
            return 0
        fi
        log "not using $mysqld ($mysql_version): MySQL 8 or later is needed; MariaDB instead"
    fi
    if ! mysql_server=$(command -v mariadbd); then
        log "installing MariaDB from apt"
        apt_install mariadb-server
        mysql_server=$(command -v mariadbd) || die "MariaDB installed but mariadbd not found"
    fi
    mysql_flavor=mariadb
    mysql_version=$("$mysql_server" --version)
    mysql_client=$(command -v mariadb) || die "MariaDB's client (mariadb) not found; install the mariadb-client package"
}

# This checkout's MySQL-family server's pid when it runs (after a reboot the
# pid recorded in $1 may be another program's, or a zombie's, whose command
# line is empty).
mysql_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && grep -qaE 'mariadbd|mysqld' "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

setup_mysql() {
    find_mysql
    local name=MariaDB; [ "$mysql_flavor" = mariadb ] || name=MySQL
    local dir=$GHBENCH_HOME/mysql
    # mysqld refuses to run as root: as root, the server changes to user
    # `mysql` itself (`user` below) and its folder is that user's.
    local as_mysql=
    if [ "$(id -u)" = 0 ]; then
        id mysql >/dev/null 2>&1 \
            || die "user 'mysql' missing: reinstall the mariadb-server package (with MySQL's own build, create it: useradd -r -s /usr/sbin/nologin mysql)"
        as_mysql=1
        if [ ! -e "$dir" ] && ! runuser -u mysql -- test -x "$GHBENCH_HOME"; then
            # `mysql` cannot reach the checkout (e.g. under /root): keep the
            # server's folder where it can, linked from where users look for
            # it (one per GHBENCH_HOME: two homes of one checkout get two).
            local outside
            outside=/var/lib/ghbench/$(printf '%s' "$GHBENCH_HOME" | md5sum | cut -c1-12)-mysql
            mkdir -p "$outside"
            ln -s "$outside" "$dir"
            log "$name's folder kept in $outside (linked from $dir): user mysql cannot enter $GHBENCH_HOME"
        fi
    fi
    mkdir -p "$dir/"
    # The server itself must never go through a link it cannot enter.
    dir=$(readlink -f "$dir")
    if [ -n "$as_mysql" ]; then chown mysql: "$dir"; fi
    local data=$dir/data conf=$dir/ghbench.cnf socket=$dir/mysqld.sock
    [ "${#socket}" -le 107 ] || die "$socket is longer than a Unix socket's path may be (107 bytes): set GHBENCH_HOME to a shorter folder"
    # What differs between the two: MariaDB keeps MySQL 5.7's query cache
    # (off here: MongoDB and PostgreSQL have none); MySQL 8 has none, keeps a
    # binary log by default (MariaDB keeps none, nor does a standalone MongoDB
    # keep an oplog: off), sizes its redo log its own way, and opens an X
    # protocol port on every interface (off).
    # The MySQL 8 lines are written from its manual and NOT tested (this
    # machine has only MariaDB); MariaDB 10.11's are.
    local flavor_lines
    if [ "$mysql_flavor" = mariadb ]; then
        flavor_lines="query_cache_type = 0
query_cache_size = 0
# the redo log holds a year's load between checkpoints
innodb_log_file_size = 1G"
    else
        # Before 8.0.30, two redo files of innodb_log_file_size: 1G in all.
        local redo="innodb_log_file_size = 512M" number
        number=$(sed -nE 's/.* Ver ([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' <<<"$mysql_version")
        if [ "$(printf '%s\n' 8.0.30 "${number:-0}" | sort -V | head -n 1)" = 8.0.30 ]; then redo="innodb_redo_log_capacity = 1G"; fi
        flavor_lines="skip-log-bin
mysqlx = OFF
# the redo log holds a year's load between checkpoints
$redo"
    fi
    local user_line="# runs as the user setup ran as"; [ -z "$as_mysql" ] || user_line="user = mysql"
    # Rewritten on every setup, so changed ports or memory settings take effect.
    local before
    before=$(cat "$conf" 2>/dev/null || true)
    cat >"$conf" <<CNF
# written by scripts/setup.sh on every run; change it with GHBENCH_MYSQL_* variables
[mysqld]
datadir = $data
port = $MYSQL_PORT
bind-address = 127.0.0.1
socket = $socket
pid-file = $dir/mysqld.pid
log-error = $dir/server.log
# temporary files of its own: not shared with another server's in /tmp
tmpdir = $dir/tmp
$user_line
# what MongoDB's WiredTiger cache gets (see scripts/setup.sh), or GHBENCH_MYSQL_BUFFER_POOL
innodb_buffer_pool_size = $MYSQL_BUFFER_POOL
# true cold runs: a restart must not load back the pages the last run left in the pool
innodb_buffer_pool_dump_at_shutdown = OFF
innodb_buffer_pool_load_at_startup = OFF
# innodb_flush_method, tmp_table_size and max_heap_table_size (the in-memory
# temporary tables of sorts and groups; larger ones go to disk) stay at the
# server's defaults
local_infile = ON
max_allowed_packet = 64M
# JSON strings compare bytewise, as MongoDB's and PostgreSQL's (locale C) do
character-set-server = utf8mb4
collation-server = utf8mb4_bin
skip-name-resolve
$flavor_lines
CNF
    # The server ignores a configuration file anyone may write.
    chmod 644 "$conf"
    # The server opens its log as the user it runs as (otherwise it says so
    # there and writes to standard error, which goes to the same file).
    if [ -n "$as_mysql" ]; then touch "$dir/server.log" && chown mysql: "$dir/server.log"; fi
    mkdir -p "$dir/tmp"
    if [ -n "$as_mysql" ]; then chown mysql: "$dir/tmp"; fi
    if [ ! -d "$data/mysql" ]; then
        [ ! -e "$data" ] || [ -z "$(ls -A "$data")" ] \
            || die "$data holds files but no system tables: not a data folder setup made; move it away"
        log "creating the $name data folder in $data"
        local init install_db
        if [ "$mysql_flavor" = mariadb ]; then
            install_db=$(command -v mariadb-install-db || command -v mysql_install_db) || die "MariaDB installed but mariadb-install-db not found"
            # root without a password, as ghbench below (root@localhost by the
            # socket; its account by this machine's name is one the server
            # ignores under skip-name-resolve, and says so in its log).
            init=("$install_db" --defaults-file="$conf" --auth-root-authentication-method=normal --skip-test-db)
            [ -z "$as_mysql" ] || init+=(--user=mysql)
        else
            # root@localhost without a password, as MariaDB's above (the server
            # makes the data folder: it must not exist yet, or be empty).
            init=("$mysql_server" --defaults-file="$conf" --initialize-insecure)
        fi
        "${init[@]}" >"$dir/init.log" 2>&1 </dev/null \
            || { cat "$dir/init.log" >&2; tail -n 30 "$dir/server.log" >&2 2>/dev/null; rm -rf "$data"; die "creating $name's data folder failed (log: $dir/init.log)"; }
    fi
    local pidfile=$dir/server.pid limited_as="${MEMORY_BYTES:-none}" limit_file=$dir/memory-limit pid
    if pid=$(mysql_pid "$pidfile") && ! port_open "$MYSQL_PORT"; then
        # Still starting, or still writing its pages out on the way down: wait for either end.
        for _ in $(seq 1 240); do
            port_open "$MYSQL_PORT" && break
            mysql_pid "$pidfile" >/dev/null || break
            sleep 0.5
        done
        if mysql_pid "$pidfile" >/dev/null && ! port_open "$MYSQL_PORT"; then
            tail -n 30 "$dir/server.log" >&2 || true
            die "$name (pid $pid) neither listens on 127.0.0.1:$MYSQL_PORT nor stops after 120 s (log: $dir/server.log)"
        fi
    fi
    # A running server cannot be moved under another limit: it is restarted.
    if mysql_pid "$pidfile" >/dev/null \
        && { [ "$before" != "$(cat "$conf")" ] || [ "$limited_as" != "$(cat "$limit_file" 2>/dev/null || echo none)" ]; }; then
        log "$name settings or memory limit changed: restarting"
        bash "$repo/scripts/down.sh" mysql >&2
    fi
    if pid=$(mysql_pid "$pidfile"); then
        log "$name already running (pid $pid)"
    else
        port_open "$MYSQL_PORT" && die "port $MYSQL_PORT is taken by another server; set GHBENCH_MYSQL_PORT"
        log "starting $name on 127.0.0.1:$MYSQL_PORT (innodb_buffer_pool_size $MYSQL_BUFFER_POOL)"
        # As SecantusDB's above: `exec` so the recorded pid is the server's
        # own, every standard stream redirected, a session of its own.
        ( enter_memory_limit mysql && cd "$dir" && exec setsid nohup "$mysql_server" --defaults-file="$conf" \
            </dev/null >>"$dir/server.log" 2>&1 ) &
        echo $! >"$pidfile"
        echo "$limited_as" >"$limit_file"
        wait_port "$MYSQL_PORT" "$name" "$dir/server.log" "$(cat "$pidfile")"
    fi
    # The user ghbench connects as, however it may (by TCP from 127.0.0.1,
    # skip-name-resolve, or the socket): every privilege, as it makes the tuned
    # setup's own database, reads information_schema, FLUSHes and ANALYZEs.
    "$mysql_client" --no-defaults --socket="$socket" -u root --connect-timeout=60 -e "
        CREATE DATABASE IF NOT EXISTS ghbench CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
        CREATE USER IF NOT EXISTS 'ghbench'@'127.0.0.1', 'ghbench'@'localhost', 'ghbench'@'%';
        GRANT ALL PRIVILEGES ON *.* TO 'ghbench'@'127.0.0.1', 'ghbench'@'localhost', 'ghbench'@'%';" </dev/null >/dev/null \
        || die "could not make the database and user ghbench on $name (log: $dir/server.log)"
}

# What `ghbench bench --cold` needs to restart these servers for true cold runs:
# each server's address, data folder and the command that restarts it (this
# checkout's script, with the settings this setup ran with).
write_servers_json() {
    local pg_data mysql_data restart
    pg_data=$(readlink -f "$GHBENCH_HOME/pg")/data
    mysql_data=$(readlink -f "$GHBENCH_HOME/mysql")/data
    restart="\"env\", \"GHBENCH_HOME=$GHBENCH_HOME\", \"GHBENCH_PG_PORT=$PG_PORT\", \"GHBENCH_MONGO_PORT=$MONGO_PORT\", \"GHBENCH_MYSQL_PORT=$MYSQL_PORT\", \"GHBENCH_VENV=$VENV\""
    # The settings given, not those scaled to a limit: `ghbench bench --memory`
    # restarts with GHBENCH_MEMORY of its own, and the scaled ones follow it.
    local given
    for given in GHBENCH_PG_SHARED_BUFFERS GHBENCH_PG_WORK_MEM GHBENCH_PG_EFFECTIVE_CACHE_SIZE GHBENCH_PG_MAINTENANCE_WORK_MEM GHBENCH_PG_MAINTENANCE_WORKERS GHBENCH_WT_CACHE_MB GHBENCH_MYSQL_BUFFER_POOL; do
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
    {"name": "mongo", "address": "127.0.0.1:$MONGO_PORT", "data_dir": "$GHBENCH_HOME/mongo/data", "restart": [$restart, "mongo"]},
    {"name": "mysql", "address": "127.0.0.1:$MYSQL_PORT", "data_dir": "$mysql_data", "restart": [$restart, "mysql"]}
  ]
}
JSON
}

mkdir -p "$GHBENCH_HOME"
# One server only (`scripts/restart.sh` after stopping it): the others stay as they are.
case $which in
    postgres) setup_postgres; exit 0 ;;
    mongo) setup_mongo; exit 0 ;;
    mysql) setup_mysql; exit 0 ;;
esac
setup_postgres
setup_mongo
setup_mysql
write_servers_json

env_lines="export DATABASE_URL=postgres://ghbench@127.0.0.1:$PG_PORT/ghbench
export MONGODB_URI=mongodb://127.0.0.1:$MONGO_PORT/ghbench?directConnection=true
export MYSQL_URL=mysql://ghbench@127.0.0.1:$MYSQL_PORT/ghbench
export GHBENCH_SERVERS=$GHBENCH_HOME/servers.json"
printf '%s\n' "$env_lines" >"$GHBENCH_HOME/env"
log "servers ready; connection settings also in $GHBENCH_HOME/env"
printf '%s\n' "$env_lines"
