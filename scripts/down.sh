#!/usr/bin/env bash
# Stops the servers `scripts/setup.sh` started; their data stays in $GHBENCH_HOME.
# Usage: scripts/down.sh [postgres|mongo|mysql|citus|citus-NODE]   (default: all; citus: every node of the cluster)
set -uo pipefail
# root's tools (runuser, apt-get) live in sbin, which a non-login shell's PATH can lack.
export PATH="$PATH:/usr/sbin:/sbin"
which=${1:-all}
case $which in all|postgres|mongo|mysql|citus|citus-coordinator|citus-worker[1-9]) ;; *) echo "usage: $0 [postgres|mongo|mysql|citus]" >&2; exit 2 ;; esac
wants() { [ "$which" = all ] || [ "$which" = "$1" ] || { [ "$which" = citus ] && [[ $1 == citus-* ]]; }; }
repo=$(cd "$(dirname "$0")/.." && pwd)
GHBENCH_HOME=${GHBENCH_HOME:-$repo/.ghbench}
GHBENCH_HOME=$(realpath -m "$GHBENCH_HOME")
# Every path below is absolute; `/` is a directory user postgres may stand in.
cd /

say_as=down
# shellcheck source=cgroup.sh
. "$repo/scripts/cgroup.sh"
# shellcheck source=lifecycle.sh
. "$repo/scripts/lifecycle.sh"
# Each stop waits for the server's process to end, as long as it makes
# progress (lifecycle.sh); one given up for stuck leaves its pid file and
# makes this script fail, after trying the others.
failed=0
# A stopped server's memory cgroup (GHBENCH_MEMORY) is removed once empty;
# the next start under a limit makes it again. Not on a restart (restart.sh):
# the cgroup's counters go on across it, as a cold run's record needs.
cleanup=${GHBENCH_RESTARTING:-}

# Stops the PostgreSQL cluster setup made in folder $2 (said as $1), when its
# postmaster runs.
stop_pg_cluster() {
    local label=$1 pgdir data pid bin run
    pgdir=$(readlink -f "$2" 2>/dev/null || echo "$2")
    data=$pgdir/data
    [ -f "$data/postmaster.pid" ] || return 0
    if postmaster_pid "$data"; then
        pid=$found_pid
        for bin in /usr/lib/postgresql/*/bin; do [ -x "$bin/pg_ctl" ] && break; done
        if [ "$(id -u)" = 0 ]; then run=(runuser -u postgres --); else run=(); fi
        # -W: pg_ctl only asks (a fast shutdown); the wait is ours, as long as
        # the shutdown checkpoint goes on. Without pg_ctl, the same signal.
        if ! "${run[@]}" "$bin/pg_ctl" -D "$data" -m fast -W stop >/dev/null 2>&1 && ! kill -INT "$pid" 2>/dev/null; then
            # Not asked to stop, it would be waited on for as long as it works.
            echo "[down] error: $label (pid $pid) could not be asked to stop (pg_ctl and SIGINT both refused): it still runs" >&2
            return 1
        fi
        stop_again=(kill -INT "$pid")
        wait_server stop "$label" "$pid" "$pgdir/server.log" || return 1
        echo "[down] $label stopped"
    else
        # PostgreSQL's own file: it tells a stale one apart itself when it starts.
        echo "[down] $label was not running (its postmaster.pid names pid ${found_pid:-?}, which is no running PostgreSQL)"
    fi
}

if wants postgres; then stop_pg_cluster PostgreSQL "$GHBENCH_HOME/pg" || failed=1; fi
if wants postgres && [ -z "$cleanup" ]; then remove_memory_cgroups postgres; fi

# stop_by_pid_file NAME PIDFILE PATTERN LOG: stops the server pid file
# PIDFILE names (SIGTERM: MongoDB's, MySQL's and MariaDB's clean shutdown,
# after which WiredTiger's checkpoint or InnoDB's writing its changed pages
# out can take long after a large load) when it is still that server (its
# command line matches PATTERN, its start time the one recorded beside: after
# a reboot the pid may be another program's). The pid file is removed only
# once no process of it runs.
stop_by_pid_file() {
    local name=$1 pidfile=$2 pattern=$3 logfile=$4 pid
    [ -f "$pidfile" ] || return 0
    if server_pid "$pidfile" "$pattern"; then
        pid=$found_pid
        if ! kill "$pid" 2>/dev/null; then
            echo "[down] error: $name (pid $pid) could not be asked to stop (SIGTERM refused): it still runs" >&2
            return 1
        fi
        stop_again=(kill "$pid")
        if wait_server stop "$name" "$pid" "$logfile"; then
            echo "[down] $name stopped"
        else
            return 1
        fi
    elif [ -n "$found_pid" ] && proc_runs "$found_pid"; then
        echo "[down] $name was not running: its pid file named pid $found_pid, now another process ($(proc_command "$found_pid")), which is left alone"
    elif [ -n "$found_pid" ]; then
        echo "[down] $name was not running (its pid file named pid $found_pid, which has ended)"
    fi
    rm -f "$pidfile" "$pidfile.start"
}

if wants mongo; then
    stop_by_pid_file "MongoDB-wire server" "$GHBENCH_HOME/mongo/server.pid" 'secantusd|mongod' "$GHBENCH_HOME/mongo/server.log" || failed=1
    if [ -z "$cleanup" ]; then remove_memory_cgroups mongo; fi
fi
if wants mysql; then
    mysqldir=$(readlink -f "$GHBENCH_HOME/mysql" 2>/dev/null || echo "$GHBENCH_HOME/mysql")
    name="MySQL-family server" pid=""
    { read -r pid <"$mysqldir/server.pid"; } 2>/dev/null || true
    if grep -qa mariadbd "/proc/$pid/cmdline" 2>/dev/null; then name=MariaDB
    elif grep -qa mysqld "/proc/$pid/cmdline" 2>/dev/null; then name=MySQL; fi
    stop_by_pid_file "$name" "$mysqldir/server.pid" 'mariadbd|mysqld' "$mysqldir/server.log" || failed=1
    if [ -z "$cleanup" ]; then remove_memory_cgroups mysql; fi
fi
# Citus's nodes, whichever setup made (the coordinator first: no query reaches
# the workers once it is down).
for node_dir in "$GHBENCH_HOME"/citus/coordinator "$GHBENCH_HOME"/citus/worker*; do
    [ -e "$node_dir" ] || continue
    node=${node_dir##*/}
    if wants "citus-$node"; then
        stop_pg_cluster "Citus $node" "$node_dir" || failed=1
        if [ -z "$cleanup" ]; then remove_memory_cgroups "citus-$node"; fi
    fi
done
exit "$failed"
