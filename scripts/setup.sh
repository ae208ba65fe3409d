#!/usr/bin/env bash
# Starts the three servers ghbench measures, owned by this checkout, idempotently:
#   - a PostgreSQL cluster in $GHBENCH_HOME/pg (installed from apt when missing)
#   - a MongoDB-wire server in $GHBENCH_HOME/mongo: a real `mongod` when one is
#     on PATH, otherwise SecantusDB in a venv (no registry ships mongod).
#   - a MySQL-family server in $GHBENCH_HOME/mysql: a real MySQL 8 when its
#     `mysqld` is on PATH, otherwise MariaDB (installed from apt when missing).
#   - a Citus cluster in $GHBENCH_HOME/citus when Citus is available (the
#     first optional server: scripts/citus.sh says when; else one line).
# Prints the connection URLs as `export` lines and writes them to $GHBENCH_HOME/env.
# Remove everything with `just down && rm -rf .ghbench`.
# Usage: scripts/setup.sh [postgres|mongo|mysql|citus]   (default: all, and the env files)
set -euo pipefail
which=${1:-all}
case $which in all|postgres|mongo|mysql|citus) ;; *) echo "usage: $0 [postgres|mongo|mysql|citus]" >&2; exit 2 ;; esac
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
# GHBENCH_DISK='riops=1000 rbps=437000000' (v2 io.max's keys: riops, rbps,
# wiops, wbps; operations or bytes a second): each server starts inside a
# block I/O cgroup holding its reads (and writes) on the disk under its data
# to that, as on a slower disk (needs root). Unset: the disk runs free.
DISK=${GHBENCH_DISK:-}

say_as=setup
# shellcheck source=cgroup.sh
. "$repo/scripts/cgroup.sh"
# shellcheck source=lifecycle.sh
. "$repo/scripts/lifecycle.sh"
# shellcheck source=citus.sh
. "$repo/scripts/citus.sh"
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
if [ -n "$DISK" ]; then
    [[ $DISK =~ ^(r|w)(iops|bps)=[1-9][0-9]*(\ (r|w)(iops|bps)=[1-9][0-9]*)*$ ]] \
        || { echo "[setup] error: GHBENCH_DISK=$DISK is not a disk limit: write riops=N, rbps=N, wiops=N, wbps=N (operations or bytes a second), space-separated, e.g. 'riops=1000 rbps=437000000'" >&2; exit 2; }
fi
memory_mb=$(( ${MEMORY_BYTES:-0} >> 20 ))
# Under a limit, each setting not given stands to it as the paper's stood to its
# 64 GiB (shared_buffers 12GB = 3/16, work_mem 1GB = 1/64); PostgreSQL's
# effective_cache_size at half of it (the PostgreSQL wiki's "normal conservative
# setting"), maintenance_work_mem 1/16.
scaled() { [ -n "$MEMORY_BYTES" ] && echo "$(( memory_mb * $1 / $2 ))MB"; }
# GHBENCH_PG_PAPER2019=1 (`ghbench bench --preset paper2019`): the paper's
# planner settings besides, random_page_cost 1.3 ("we use io1, NVMe"),
# default_statistics_target 200 and effective_cache_size 36GB of its 64 GiB,
# 9/16 of the limit (of this machine's memory without one).
PAPER2019=${GHBENCH_PG_PAPER2019:-}
paper_cache() {
    [ -n "$PAPER2019" ] || return 1
    local of; of=$(machine_mb); [ -z "$MEMORY_BYTES" ] || of=$memory_mb
    echo "$(( of * 9 / 16 ))MB"
}
# Settings recorded by every query run; sized for a 24 GiB machine (the paper used
# shared_buffers=12GB, work_mem=1GB on 64 GiB).
PG_SHARED_BUFFERS=${GHBENCH_PG_SHARED_BUFFERS:-$(scaled 3 16 || echo 2GB)}
PG_WORK_MEM=${GHBENCH_PG_WORK_MEM:-$(scaled 1 64 || echo 256MB)}
PG_EFFECTIVE_CACHE_SIZE=${GHBENCH_PG_EFFECTIVE_CACHE_SIZE:-$(paper_cache || scaled 1 2 || echo 4GB)}
# PostgreSQL's defaults unless the paper's are asked for.
PG_PLANNER=; [ -z "$PAPER2019" ] || PG_PLANNER=$'random_page_cost = 1.3\ndefault_statistics_target = 200'
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
    machine_mb=$(machine_mb)
    pool_mb=$(( (machine_mb - 1024) / 2 )); [ "$pool_mb" -ge 256 ] || pool_mb=256
    MYSQL_BUFFER_POOL=${pool_mb}M
fi
pool_bytes=$(mysql_size_bytes "$MYSQL_BUFFER_POOL") \
    || { echo "[setup] error: GHBENCH_MYSQL_BUFFER_POOL=$MYSQL_BUFFER_POOL is not a MySQL size (a number of bytes, or one with K, M, G or T after it, e.g. 512M or 2G)" >&2; exit 2; }
# As PostgreSQL's buffers: a pool larger than the limit would have the server killed once it fills.
# Checked only when MariaDB is set up: restarting another server under a limit
# (`restart.sh postgres` for `bench --memory`) must not fail on its setting.
if { [ "$which" = all ] || [ "$which" = mysql ]; } && [ -n "$MEMORY_BYTES" ] && awk -v b="$pool_bytes" -v m="$MEMORY_BYTES" 'BEGIN { exit !(b >= m) }'; then
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
        # Block I/O counted per server where the kernel does (its throttle, if
        # any, is enter_disk_limit's).
        local blkio; blkio=$(cgroup_mount blkio)
        if [ -n "$blkio" ] && mkdir -p "$blkio/$name" 2>/dev/null; then
            clear_disk_rules "$blkio/$name" v1
            echo "$mine" >"$blkio/$name/cgroup.procs" || true
        fi
    else
        v2=$(cgroup_mount 2)
        [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" \
            || die "GHBENCH_MEMORY needs a cgroup memory controller, and this machine mounts none (no cgroup v1 'memory', no cgroup v2 offering it)"
        dir=$v2/$name
        if [ -d "$dir" ] && [ "$(cat "$dir/memory.max")" != "$MEMORY_BYTES" ] && [ -z "$(cat "$dir/cgroup.procs")" ]; then
            rmdir "$dir"
        fi
        hand_down "$v2" "+memory +io" || hand_down "$v2" "+memory" || die "cannot hand the memory controller down to $v2/ghbench"
        mkdir -p "$dir" || die "cannot make the memory cgroup $dir"
        echo "$MEMORY_BYTES" >"$dir/memory.max" || die "cannot set the limit of $dir"
        if [ -e "$dir/memory.swap.max" ]; then echo 0 >"$dir/memory.swap.max" || die "cannot turn swap off in $dir"; fi
        echo "$mine" >"$dir/cgroup.procs" || die "cannot start inside the memory cgroup $dir"
    fi
    log "$1 starts inside the memory cgroup $name: $MEMORY of memory, no swap"
}

# Moves this (sub)shell into server $1's block I/O cgroup holding $DISK on the
# disk under its data folder $2, so the server it starts next reads through
# that throttle. Without $DISK: the rules a disk limit left in that cgroup
# are removed, whether or not the server enters it (a memory limit's v1
# blkio cgroup of the same name, or one left empty by a bench).
enter_disk_limit() {
    local name blkio v2 dev mine=$BASHPID key value file
    name=$(cgroup_name "$1")
    blkio=$(cgroup_mount blkio) v2=$(cgroup_mount 2)
    if [ -z "$DISK" ]; then
        if [ -n "$blkio" ] && [ -d "$blkio/$name" ]; then clear_disk_rules "$blkio/$name" v1; fi
        if [ -n "$v2" ] && [ -d "$v2/$name" ]; then clear_disk_rules "$v2/$name" v2; fi
        return 0
    fi
    [ "$(id -u)" = 0 ] || die "GHBENCH_DISK needs root: the limit is a block I/O cgroup made under /sys/fs/cgroup (run setup as root, e.g. sudo -E just setup)"
    dev=$(block_device_under "$2") || die "GHBENCH_DISK: $dev"
    if [ -n "$blkio" ]; then
        mkdir -p "$blkio/$name" || die "cannot make the block I/O cgroup $blkio/$name"
        clear_disk_rules "$blkio/$name" v1
        for key in $DISK; do
            value=${key#*=} key=${key%%=*}
            case $key in riops) file=read_iops ;; rbps) file=read_bps ;; wiops) file=write_iops ;; *) file=write_bps ;; esac
            echo "$dev $value" >"$blkio/$name/blkio.throttle.${file}_device" || die "cannot set $key=$value on $dev in $blkio/$name"
        done
        echo "$mine" >"$blkio/$name/cgroup.procs" || die "cannot start inside the block I/O cgroup $blkio/$name"
    else
        [ -n "$v2" ] && grep -qw io "$v2/cgroup.controllers" \
            || die "GHBENCH_DISK needs a cgroup block I/O controller, and this machine mounts none (no cgroup v1 'blkio', no cgroup v2 offering 'io')"
        hand_down "$v2" "+io" || die "cannot hand the io controller down to $v2/ghbench"
        mkdir -p "$v2/$name" || die "cannot make the cgroup $v2/$name"
        clear_disk_rules "$v2/$name" v2
        # A disk limit alone: a memory limit a bench left in this cgroup (v2
        # keeps it across restarts, for its counters) must not hold.
        if [ -z "$MEMORY_BYTES" ] && [ -e "$v2/$name/memory.max" ]; then
            echo max >"$v2/$name/memory.max" || die "cannot lift the memory limit left in $v2/$name"
            if [ -e "$v2/$name/memory.swap.max" ]; then echo max >"$v2/$name/memory.swap.max" || true; fi
        fi
        echo "$dev $DISK" >"$v2/$name/io.max" || die "cannot set $DISK on $dev in $v2/$name/io.max"
        echo "$mine" >"$v2/$name/cgroup.procs" || die "cannot start inside the cgroup $v2/$name"
    fi
    log "$1 starts inside the block I/O cgroup $name: $DISK on $dev"
}

# Both limits: the memory cgroup, then the block I/O one (v1: the blkio
# cgroup of the same name the memory limit entered).
enter_limits() { enter_memory_limit "$1" && enter_disk_limit "$1" "$2"; }

# The postmaster about to start (from this subshell) the OOM killer's last
# choice among its processes, its backends before it: as Debian's
# pg_ctlcluster starts PostgreSQL (postmaster -900, backends 0) and
# PostgreSQL's documentation advises (Linux Memory Overcommit:
# PG_OOM_ADJUST_FILE, PG_OOM_ADJUST_VALUE). Under a memory limit the kernel
# then kills the backend that ran out, and the server recovers in a second
# and answers again; a killed postmaster left the node down until restarted
# (seen: two Citus workers under a 108 MiB share). Lowering a score needs
# CAP_SYS_RESOURCE (a container's root may lack it): then the backends are
# raised to 500 instead, which anyone may do, and the order is the same.
shield_postmaster() {
    local backends=0
    { echo -900 >/proc/self/oom_score_adj; } 2>/dev/null || backends=500
    export PG_OOM_ADJUST_FILE=/proc/self/oom_score_adj PG_OOM_ADJUST_VALUE=$backends
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_started WHAT PID LOG READY READY_COMMAND...: waits for server WHAT
# (process PID, writing LOG) to READY (e.g. "listen on 127.0.0.1:27017"),
# which READY_COMMAND tells, as long as it makes progress (lifecycle.sh's
# wait_server: a crash recovery at scale takes long); dies at once when the
# process ended, and when it is stuck.
wait_started() {
    local what=$1 pid=$2 logfile=$3 ready=$4 rc=0
    shift 3
    wait_server start "$what" "$pid" "$logfile" "$@" || rc=$?
    case $rc in
        0) ;;
        2) tail -n 30 "$logfile" >&2 || true
           die "$what (pid $pid) ended before it could $ready${MEMORY:+ (under GHBENCH_MEMORY=$MEMORY: a log that stops short means the kernel killed it for memory)} (log: $logfile)" ;;
        *) exit 1 ;; # said by wait_server, as the last line
    esac
}

# ghbench's journal of the changes it made to these servers
# ($GHBENCH_HOME/changes/*.json, written before each change and removed once
# undone; lifecycle.sh's journal_entries), read once. Not on ghbench's own
# restart of its server (restart.sh sets GHBENCH_RESTART_BY_GHBENCH): it
# keeps its journal itself.
journal=()
read_journal() {
    [ "${GHBENCH_RESTART_BY_GHBENCH:-}" != 1 ] && [ -d "$GHBENCH_HOME/changes" ] || return 0
    local out line state file reason
    # One process undoes at a time (ghbench takes the same lock): held on fd
    # 9 until setup ends. Every server started below closes fd 9 (`9>&-`),
    # or it would hold the lock for as long as it runs.
    exec 9>>"$GHBENCH_HOME/changes/.lock"
    if ! flock -n 9; then
        log "waiting for another ghbench or setup that is putting servers back ($GHBENCH_HOME/changes)"
        flock -w 600 9 || die "another process held $GHBENCH_HOME/changes/.lock for 600 s: run setup again once it has ended"
    fi
    # (Not Citus's nodes: no engine changes them yet, so nothing journals them.)
    out=$(journal_entries "$GHBENCH_HOME" "postgres=127.0.0.1:$PG_PORT" "mongo=127.0.0.1:$MONGO_PORT" "mysql=127.0.0.1:$MYSQL_PORT") || die "could not read ghbench's journal of changes in $GHBENCH_HOME/changes (with python3)"
    [ -n "$out" ] || return 0
    mapfile -t journal <<<"$out"
    for line in "${journal[@]}"; do
        IFS=$'\t' read -r state _ file reason <<<"$line"
        if [ "$state" = bad ]; then log "$file: cannot read it as a change ghbench journals ($reason): left as it is"; fi
    done
}

# Whether server $1 (said as $2) is to be left as it is this time: a ghbench
# still running has it changed (or one in another pid namespace, which setup
# cannot tell ended), and puts it back itself when it ends; a bench in
# another terminal must not be disturbed. Sets journal_undo to the entries
# of the server left by ghbench runs that ended: the server is restarted as
# setup leaves it, which undoes each of them (journal_restored then).
journal_undo=()
journal_holds() {
    local server=$1 label=$2 line state name file pid command made_at said held=
    journal_undo=()
    for line in "${journal[@]}"; do
        IFS=$'\t' read -r state name file pid command made_at said <<<"$line"
        [ "$name" = "$server" ] || continue
        case $state in
            alive) held=1
                log "$label: left as it is: ghbench pid $pid ($command) still running has it $said; it puts it back when it ends" ;;
            unknown) held=1
                log "$label: left as it is: ghbench pid $pid ($command), of another pid namespace (setup cannot tell whether it still runs), has it $said; it puts it back when it ends" ;;
            dead) journal_undo+=("$line") ;;
        esac
    done
    [ -n "$held" ] || return 1
    for line in "${journal_undo[@]}"; do
        IFS=$'\t' read -r state name file pid command made_at said <<<"$line"
        log "$label: not restored yet: a ghbench that ended (pid $pid, $command, $made_at) left it $said; restored once the running one has ended"
    done
    journal_undo=()
}

# The caller's pid: the server pid file $1 names, when that process still is
# the server setup started (its command line matches $2, its boot and start
# time are as recorded: after a reboot the pid may be another program's, the
# distribution's own MariaDB's even); empty otherwise, and the pid file,
# stale, removed.
running_from_pid_file() {
    pid=
    if server_pid "$1" "$2"; then
        pid=$found_pid
    else
        rm -f "$1" "$1.start"
    fi
}

# The caller's server $1 (process $pid, log $2) found running but not
# answering on port $3: still starting, or on its way down (writing its
# pages out). Waits for either end as long as it makes progress; sets the
# caller's pid empty when it ended.
settle_if_silent() {
    local rc=0
    port_open "$3" && return 0
    log "$1 (pid $pid) does not answer on 127.0.0.1:$3: waiting for it to, or to stop"
    wait_server settle "$1" "$pid" "$2" "listen on 127.0.0.1:$3" port_open "$3" || rc=$?
    case $rc in 0) ;; 2) pid= ;; *) exit 1 ;; esac
}

# A server left as it is for a ghbench that holds it ($1, said so) must
# still answer on port $2; one that does not (stopped by that ghbench, or one
# setup cannot tell has ended) is said, and setup fails at its end rather
# than say "servers ready".
held_down=()
held_answers() {
    port_open "$2" && return 0
    log "warning: $1 does not answer on 127.0.0.1:$2, and setup leaves it to the ghbench that holds it (said above)"
    held_down+=("$1")
}

# Server $1 (said so) was restarted as setup leaves it: the entries of
# journal_undo are undone, said so and removed.
journal_restored() {
    local label=$1 line state name file pid command made_at said
    for line in "${journal_undo[@]}"; do
        IFS=$'\t' read -r state name file pid command made_at said <<<"$line"
        log "restored $label: a ghbench that ended (pid $pid, $command, $made_at) left it $said; restarted as setup leaves it"
        rm -f "$file"
    done
    journal_undo=()
}

# Stops server $1 (postgres, mongo, mysql, citus-NODE), to be started again below, when
# it runs ($2: its pid, or empty) and there is a reason to ($3, said first;
# empty: none). Then sets the caller's pid empty.
restart_for() {
    [ -n "$2" ] && [ -n "$3" ] || return 0
    log "$3"
    # down.sh waits for the stop as long as the server makes progress, and
    # fails (its error the last line said) when it does not stop.
    GHBENCH_HOME=$GHBENCH_HOME bash "$repo/scripts/down.sh" "$1" >&2 || exit 1
    pid=
}

pg_bindir() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null && dirname "$(command -v initdb)" && return 0
    return 1
}

# The postmaster `pg_ctl -W start` just started for data folder $2 ($1:
# PostgreSQL's bin folder; $3: its log, $4: the log's size before): its pid,
# once it runs as `postgres -D DATA` (pg_ctl starts it through a shell that
# execs it) or has written its postmaster.pid. Fails when neither is seen and
# the log says FATAL or PANIC since, or for 10 s: it ended at once (say, a
# bad setting).
new_postmaster() {
    local command pid
    command="^$(printf '%s' "$1/postgres -D $2" | sed 's/[][\.*^$+?(){}|]/\\&/g')\$"
    for _ in $(seq 1 50); do
        pid=$(pgrep -f -- "$command" | head -n 1 || true)
        if [ -n "$pid" ]; then echo "$pid"; return 0; fi
        if postmaster_pid "$2" && [ "$(stat -c %Y "$2/postmaster.pid")" -ge "$(( $(date +%s) - 30 ))" ]; then echo "$found_pid"; return 0; fi
        if tail -c +$(( $4 + 1 )) "$3" 2>/dev/null | grep -qE '(FATAL|PANIC): '; then return 1; fi
        sleep 0.2
    done
    return 1
}

# Whether the postmaster $2 of data folder $1 is ready and answers on port $3.
postgres_serves() { postmaster_ready "$1" "$2" && port_open "$3"; }

# The settings setup writes for a PostgreSQL cluster it owns: shared_buffers
# $1, work_mem $2, effective_cache_size $3, maintenance_work_mem $4.
pg_tuning() {
    cat <<EOF
shared_buffers = $1
work_mem = $2
effective_cache_size = $3
maintenance_work_mem = $4
max_parallel_maintenance_workers = $PG_MAINTENANCE_WORKERS
max_wal_size = 8GB
checkpoint_timeout = 30min
$PG_PLANNER
EOF
}

setup_postgres() {
    setup_pg_cluster PostgreSQL postgres "$GHBENCH_HOME/pg" "$PG_PORT" GHBENCH_PG_PORT "$(printf '%s' "$repo" | md5sum | cut -c1-12)" \
        "$(pg_tuning "$PG_SHARED_BUFFERS" "$PG_WORK_MEM" "$PG_EFFECTIVE_CACHE_SIZE" "$PG_MAINTENANCE_WORK_MEM")"
}

# Creates (once) and starts (unless running with these settings) a PostgreSQL
# cluster setup owns, with the database ghbench: $1 its label (PostgreSQL,
# "Citus worker1"), $2 its server name (journal, memory cgroup, down.sh), $3
# its folder, $4 its port, $5 the variable that sets the port, $6 the name of
# its folder under /var/lib/ghbench when user postgres cannot enter $3's, $7
# its settings (pg_tuning's, and any of its own).
setup_pg_cluster() {
    local label=$1 name=$2 dir=$3 port=$4 port_variable=$5 outside_name=$6 settings=$7 bin
    if ! bin=$(pg_bindir); then
        log "installing PostgreSQL from apt"
        apt_install postgresql
        bin=$(pg_bindir) || die "PostgreSQL installed but initdb not found"
    fi
    # initdb refuses to run as root: the cluster belongs to the `postgres` user then.
    local run=()
    mkdir -p "$(dirname "$dir")"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "user 'postgres' missing; reinstall the postgresql package"
        run=(runuser -u postgres --)
        if [ ! -e "$dir" ] && ! runuser -u postgres -- test -x "$(dirname "$dir")"; then
            # `postgres` cannot reach the checkout (e.g. under /root): keep the
            # cluster where it can, linked from where users look for it.
            local outside=/var/lib/ghbench/$outside_name
            mkdir -p "$outside"
            ln -s "$outside" "$dir"
            log "$label's cluster kept in $outside (linked from $dir): user postgres cannot enter $(dirname "$dir")"
        fi
    fi
    mkdir -p "$dir/"
    # The server itself must never go through a link it cannot enter.
    dir=$(readlink -f "$dir")
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    local data=$dir/data
    if [ ! -f "$data/PG_VERSION" ]; then
        log "creating $label's cluster in $data"
        # Locale C: text sorts bytewise, as MongoDB sorts strings, so tie-breaks by
        # name agree across engines.
        "${run[@]}" "$bin/initdb" -D "$data" -U ghbench --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; die "initdb failed for $label"; }
        echo "include_if_exists = 'ghbench.conf'" | "${run[@]}" tee -a "$data/postgresql.conf" >/dev/null
    fi
    # Changed by a ghbench still running: left as it is, settings too.
    journal_holds "$name" "$label" && { held_answers "$label" "$port"; return 0; }
    local restore=; [ ${#journal_undo[@]} -eq 0 ] || restore=1
    # Rewritten on every setup, so changed ports or memory settings take effect.
    local conf=$data/ghbench.conf before
    before=$(cat "$conf" 2>/dev/null || true)
    "${run[@]}" tee "$conf" >/dev/null <<EOF
# written by scripts/setup.sh on every run; change it with GHBENCH_PG_* variables
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
$settings
EOF
    grep -q "include_if_exists = 'ghbench.conf'" "$data/postgresql.conf" \
        || echo "include_if_exists = 'ghbench.conf'" | "${run[@]}" tee -a "$data/postgresql.conf" >/dev/null
    local limited_as="${MEMORY_BYTES:-none}${DISK:+ disk $DISK}" limit_file=$dir/memory-limit pid="" rc=0
    if postmaster_pid "$data"; then
        pid=$found_pid
        # Still starting (a crash recovery at scale takes long), or on its way
        # down (pg_ctl status says it runs until it is gone): wait for either end.
        if ! postmaster_ready "$data" "$pid"; then
            log "$label (pid $pid) is starting or stopping: waiting for it to accept connections or to stop"
            wait_server settle "$label" "$pid" "$dir/server.log" "accept connections" postmaster_ready "$data" "$pid" || rc=$?
            case $rc in 0) ;; 2) pid= ;; *) exit 1 ;; esac
        fi
    fi
    # A running server cannot be moved under another limit: it is restarted.
    local why=
    if [ -n "$restore" ]; then why="$label: a ghbench that ended left it changed: restarting as setup leaves it"
    elif [ "$before" != "$(cat "$conf")" ] || [ "$limited_as" != "$(cat "$limit_file" 2>/dev/null || echo none)" ]; then
        why="$label settings, memory or disk limit changed: restarting"
    fi
    restart_for "$name" "$pid" "$why"
    if [ -n "$pid" ]; then
        log "$label already running"
    else
        port_open "$port" && die "port $port is taken by another server; set $port_variable"
        log "starting $label on 127.0.0.1:$port"
        # -W: pg_ctl only starts it; the wait is ours, as long as it makes
        # progress. (`&&`: under `||`, `set -e` does not stop a failed step.)
        local log_size; log_size=$(file_size "$dir/server.log")
        ( enter_limits "$name" "$data" && shield_postmaster &&
          "${run[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -W start >/dev/null 9>&- ) \
            || { tail -n 30 "$dir/server.log" >&2; die "$label did not start"; }
        pid=$(new_postmaster "$bin" "$data" "$dir/server.log" "$log_size") \
            || { tail -n 30 "$dir/server.log" >&2; die "$label ended before it could accept connections on 127.0.0.1:$port${MEMORY:+ (under GHBENCH_MEMORY=$MEMORY: a log that stops short means the kernel killed it for memory)} (log: $dir/server.log)"; }
        wait_started "$label" "$pid" "$dir/server.log" "accept connections on 127.0.0.1:$port" postgres_serves "$data" "$pid" "$port"
        echo "$limited_as" >"$limit_file"
        journal_restored "$label"
    fi
    if ! "$bin/psql" -h 127.0.0.1 -p "$port" -U ghbench -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'ghbench'" | grep -q 1; then
        "$bin/createdb" -h 127.0.0.1 -p "$port" -U ghbench ghbench
    fi
}

setup_mongo() {
    local dir=$GHBENCH_HOME/mongo
    mkdir -p "$dir/data"
    # Changed by a ghbench still running: left as it is.
    journal_holds mongo "MongoDB-wire server" && { held_answers "MongoDB-wire server" "$MONGO_PORT"; return 0; }
    local pidfile=$dir/server.pid pid="" rc=0 why=""
    local limited_as="${MEMORY_BYTES:-none}${DISK:+ disk $DISK}" limit_file=$dir/memory-limit
    if [ ${#journal_undo[@]} -gt 0 ]; then why="MongoDB-wire server: a ghbench that ended left it changed: restarting as setup leaves it"
    elif [ "$limited_as" != "$(cat "$limit_file" 2>/dev/null || echo none)" ]; then
        # A running server cannot be moved under another limit: it is restarted.
        why="MongoDB-wire server's memory or disk limit changed: restarting"
    fi
    running_from_pid_file "$pidfile" 'secantusd|mongod'
    # Started for another port (GHBENCH_MONGO_PORT changed): it would never answer on this one.
    if [ -n "$pid" ] && [ -z "$why" ] && [[ " $(proc_command "$pid") " != *" --port $MONGO_PORT "* ]]; then
        why="MongoDB-wire server's port changed: restarting"
    fi
    [ -z "$pid" ] || [ -n "$why" ] || settle_if_silent "MongoDB-wire server" "$dir/server.log" "$MONGO_PORT"
    restart_for mongo "$pid" "$why"
    if [ -n "$pid" ]; then
        log "MongoDB-wire server already running (pid $pid)"
        return
    fi
    echo "$limited_as" >"$limit_file"
    port_open "$MONGO_PORT" && die "port $MONGO_PORT is taken by another server; set GHBENCH_MONGO_PORT"
    if command -v mongod >/dev/null; then
        log "starting mongod on 127.0.0.1:$MONGO_PORT"
        local cache=(); [ -z "$WT_CACHE_MB" ] || cache=(--wiredTigerCacheSizeGB "$(awk -v mb="$WT_CACHE_MB" 'BEGIN { printf "%.2f", mb / 1024 }')")
        # Not --fork: mongod's parent would wait, silent, through a WiredTiger
        # recovery that can take minutes at scale; started as the others are,
        # the wait below says its progress every 15 s. The pid and start time
        # recorded are the server's own (exec keeps both).
        ( enter_limits mongo "$dir/data" && cd "$dir" && exec setsid nohup mongod --dbpath "$dir/data" --port "$MONGO_PORT" --bind_ip 127.0.0.1 "${cache[@]}" \
            --logpath "$dir/server.log" --pidfilepath "$pidfile.mongod" </dev/null >/dev/null 2>&1 9>&- ) &
        pid=$!
        record_pid "$pidfile" "$pid"
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
        (enter_limits mongo "$dir/data" && cd "$dir" && exec setsid nohup "$venv/bin/secantusd-py" --host 127.0.0.1 --port "$MONGO_PORT" \
            --storage-path "$dir/data" --standalone "${cache[@]}" </dev/null >"$dir/server.log" 2>&1 9>&-) &
        # The subshell's pid and start time are the server's: exec keeps both.
        pid=$!
        record_pid "$pidfile" "$pid"
    fi
    wait_started "MongoDB-wire server" "$pid" "$dir/server.log" "listen on 127.0.0.1:$MONGO_PORT" port_open "$MONGO_PORT"
    journal_restored "MongoDB-wire server"
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
    # Changed by a ghbench still running: left as it is, settings too.
    journal_holds mysql "$name" && { held_answers "$name" "$MYSQL_PORT"; return 0; }
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
    local pidfile=$dir/server.pid limited_as="${MEMORY_BYTES:-none}${DISK:+ disk $DISK}" limit_file=$dir/memory-limit pid="" rc=0 why=""
    if [ ${#journal_undo[@]} -gt 0 ]; then why="$name: a ghbench that ended left it changed: restarting as setup leaves it"
    elif [ "$before" != "$(cat "$conf")" ] || [ "$limited_as" != "$(cat "$limit_file" 2>/dev/null || echo none)" ]; then
        # A running server cannot be moved under another limit: it is restarted.
        why="$name settings, memory or disk limit changed: restarting"
    fi
    running_from_pid_file "$pidfile" 'mariadbd|mysqld'
    [ -z "$pid" ] || [ -n "$why" ] || settle_if_silent "$name" "$dir/server.log" "$MYSQL_PORT"
    restart_for mysql "$pid" "$why"
    if [ -n "$pid" ]; then
        log "$name already running (pid $pid)"
    else
        port_open "$MYSQL_PORT" && die "port $MYSQL_PORT is taken by another server; set GHBENCH_MYSQL_PORT"
        log "starting $name on 127.0.0.1:$MYSQL_PORT (innodb_buffer_pool_size $MYSQL_BUFFER_POOL)"
        # As SecantusDB's above: `exec` so the recorded pid is the server's
        # own (and its start time), every standard stream redirected, a
        # session of its own.
        ( enter_limits mysql "$data" && cd "$dir" && exec setsid nohup "$mysql_server" --defaults-file="$conf" \
            </dev/null >>"$dir/server.log" 2>&1 9>&- ) &
        pid=$!
        record_pid "$pidfile" "$pid"
        echo "$limited_as" >"$limit_file"
        wait_started "$name" "$pid" "$dir/server.log" "listen on 127.0.0.1:$MYSQL_PORT" port_open "$MYSQL_PORT"
        journal_restored "$name"
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
    # The cluster's shape, which its restart keeps.
    if [ -n "$citus_ready" ]; then restart+=", \"GHBENCH_CITUS_PORT=$CITUS_PORT\", \"GHBENCH_CITUS_WORKERS=$CITUS_WORKERS\", \"GHBENCH_SETUP_CITUS_MEMORY=$CITUS_MEMORY\""; fi
    # The limits setup ran with, which a restart keeps unless GHBENCH_MEMORY
    # or GHBENCH_DISK says otherwise.
    restart+=", \"GHBENCH_SETUP_MEMORY=$MEMORY\", \"GHBENCH_SETUP_DISK=$DISK\", \"GHBENCH_SETUP_PG_PAPER2019=$PAPER2019\", \"bash\", \"$repo/scripts/restart.sh\""
    # Citus by its coordinator's address; its restart restarts every node (a
    # cold run of the cluster).
    local citus_entry=
    if [ -n "$citus_ready" ]; then
        citus_entry=",
    {\"name\": \"citus\", \"address\": \"127.0.0.1:$CITUS_PORT\", \"data_dir\": \"$(readlink -f "$GHBENCH_HOME/citus/coordinator")/data\", \"restart\": [$restart, \"citus\"]}"
    fi
    cat >"$GHBENCH_HOME/servers.json" <<JSON
{
  "written_by": "scripts/setup.sh",
  "memory": "$MEMORY",
  "disk": "$DISK",
  "servers": [
    {"name": "postgres", "address": "127.0.0.1:$PG_PORT", "data_dir": "$pg_data", "restart": [$restart, "postgres"]},
    {"name": "mongo", "address": "127.0.0.1:$MONGO_PORT", "data_dir": "$GHBENCH_HOME/mongo/data", "restart": [$restart, "mongo"]},
    {"name": "mysql", "address": "127.0.0.1:$MYSQL_PORT", "data_dir": "$mysql_data", "restart": [$restart, "mysql"]}$citus_entry
  ]
}
JSON
}

mkdir -p "$GHBENCH_HOME"
read_journal
# Fails when a server left to the ghbench that holds it does not answer.
none_held_down() {
    [ ${#held_down[@]} -eq 0 ] || die "${held_down[*]} not answering, held by a ghbench that runs (or that setup cannot tell has ended): run setup again once it has ended, or remove its entry in $GHBENCH_HOME/changes if it has"
}
# One server only (`scripts/restart.sh` after stopping it): the others stay as they are.
case $which in
    postgres) setup_postgres; none_held_down; exit 0 ;;
    mongo) setup_mongo; none_held_down; exit 0 ;;
    mysql) setup_mysql; none_held_down; exit 0 ;;
    citus) setup_citus; [ -n "$citus_ready" ] || exit 1; none_held_down; exit 0 ;;
esac
check_citus_shape
setup_postgres
setup_mongo
setup_mysql
# Citus is optional: in a subshell of its own (set -e kept: not under `||`), so
# its failure, said there, leaves the other servers ready without it.
set +e
( set -e; setup_citus; [ -n "$citus_ready" ] || exit 3 )
citus_status=$?
set -e
case $citus_status in
    0) citus_ready=1 ;;
    3) ;; # skipped, said in one line
    *) log "Citus not started (said above): the other servers are ready without it" ;;
esac
write_servers_json
none_held_down

env_lines="export DATABASE_URL=postgres://ghbench@127.0.0.1:$PG_PORT/ghbench
export MONGODB_URI=mongodb://127.0.0.1:$MONGO_PORT/ghbench?directConnection=true
export MYSQL_URL=mysql://ghbench@127.0.0.1:$MYSQL_PORT/ghbench
export GHBENCH_SERVERS=$GHBENCH_HOME/servers.json"
if [ -n "$citus_ready" ]; then env_lines+="
export CITUS_URL=postgres://ghbench@127.0.0.1:$CITUS_PORT/ghbench"; fi
printf '%s\n' "$env_lines" >"$GHBENCH_HOME/env"
log "servers ready; connection settings also in $GHBENCH_HOME/env"
printf '%s\n' "$env_lines"
