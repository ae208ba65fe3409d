#!/usr/bin/env bash
# Stops the servers `scripts/setup.sh` started; their data stays in $GHBENCH_HOME.
# Usage: scripts/down.sh [postgres|mongo|mysql]   (default: all three)
set -uo pipefail
# root's tools (runuser, apt-get) live in sbin, which a non-login shell's PATH can lack.
export PATH="$PATH:/usr/sbin:/sbin"
which=${1:-all}
case $which in all|postgres|mongo|mysql) ;; *) echo "usage: $0 [postgres|mongo|mysql]" >&2; exit 2 ;; esac
wants() { [ "$which" = all ] || [ "$which" = "$1" ]; }
repo=$(cd "$(dirname "$0")/.." && pwd)
GHBENCH_HOME=${GHBENCH_HOME:-$repo/.ghbench}
GHBENCH_HOME=$(realpath -m "$GHBENCH_HOME")
# Every path below is absolute; `/` is a directory user postgres may stand in.
cd /

data=$(readlink -f "$GHBENCH_HOME/pg" 2>/dev/null || echo "$GHBENCH_HOME/pg")/data
if wants postgres && [ -f "$data/postmaster.pid" ]; then
    for bin in /usr/lib/postgresql/*/bin; do [ -x "$bin/pg_ctl" ] && break; done
    if [ "$(id -u)" = 0 ]; then run=(runuser -u postgres --); else run=(); fi
    "${run[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null && echo "[down] PostgreSQL stopped"
fi
# shellcheck source=cgroup.sh
. "$repo/scripts/cgroup.sh"
# A stopped server's memory cgroup (GHBENCH_MEMORY) is removed once empty;
# the next start under a limit makes it again. Not on a restart (restart.sh):
# the cgroup's counters go on across it, as a cold run's record needs.
cleanup=${GHBENCH_RESTARTING:-}
if wants postgres && [ -z "$cleanup" ]; then remove_memory_cgroups postgres; fi
pidfile=$GHBENCH_HOME/mongo/server.pid
if wants mongo && [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    # After a reboot the pid may belong to something else: only stop our server.
    if grep -qaE 'secantusd|mongod' "/proc/$pid/cmdline" 2>/dev/null && kill "$pid" 2>/dev/null; then
        # WiredTiger's checkpoint at shutdown can take seconds on a large collection.
        for _ in $(seq 1 240); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "[down] MongoDB-wire server (pid $pid) is still stopping" >&2
        else
            echo "[down] MongoDB-wire server stopped"
        fi
    fi
    rm -f "$pidfile"
fi
if wants mongo && [ -z "$cleanup" ]; then remove_memory_cgroups mongo; fi
pidfile=$GHBENCH_HOME/mysql/server.pid
if wants mysql && [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    # Only our server (after a reboot the pid may be another program's); a
    # zombie's command line is empty, so a server that ended no longer counts.
    ours() { grep -qaE 'mariadbd|mysqld' "/proc/$pid/cmdline" 2>/dev/null; }
    name=MySQL; if grep -qa mariadbd "/proc/$pid/cmdline" 2>/dev/null; then name=MariaDB; fi
    # SIGTERM is MySQL's and MariaDB's clean shutdown: InnoDB writes the
    # pool's changed pages out first, which after a large load takes a while.
    if ours && kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 480); do ours || break; sleep 0.25; done
        if ours; then
            echo "[down] $name (pid $pid) is still stopping" >&2
        else
            echo "[down] $name stopped"
        fi
    fi
    # Kept while it runs: setup.sh then waits for it to end before starting another.
    ours || rm -f "$pidfile"
fi
if wants mysql && [ -z "$cleanup" ]; then remove_memory_cgroups mysql; fi
