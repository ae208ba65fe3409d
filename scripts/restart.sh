#!/usr/bin/env bash
# Restarts one server `scripts/setup.sh` started, the way `ghbench query|bench --cold`
# asks for a true cold run (the command is listed in $GHBENCH_HOME/servers.json):
# stop it, then setup.sh starts it (only it) again with the same settings.
# Usage: scripts/restart.sh postgres|mongo|mysql|citus   (citus: every node of the cluster)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in postgres|mongo|mysql|citus) ;; *) echo "usage: $0 postgres|mongo|mysql|citus" >&2; exit 2 ;; esac
# The memory limit: the one asked for now (`ghbench bench --memory` sets
# GHBENCH_MEMORY, empty for none), else the one setup ran with.
export GHBENCH_MEMORY=${GHBENCH_MEMORY-${GHBENCH_SETUP_MEMORY:-}}
# The disk limit the same way (`ghbench bench --disk` sets GHBENCH_DISK).
export GHBENCH_DISK=${GHBENCH_DISK-${GHBENCH_SETUP_DISK:-}}
# And the paper's planner settings (`bench --preset paper2019` sets GHBENCH_PG_PAPER2019).
export GHBENCH_PG_PAPER2019=${GHBENCH_PG_PAPER2019-${GHBENCH_SETUP_PG_PAPER2019:-}}
# Both wait as long as the server makes progress (GHBENCH_STUCK_AFTER, see
# lifecycle.sh) and fail when it does not stop or start: a stop that failed
# ends this script (set -e) before setup could take the old server, still
# on its way down, for running.
GHBENCH_RESTARTING=1 bash "$here/down.sh" "$1" >&2
# GHBENCH_RESTART_BY_GHBENCH: the restart is ghbench's own, which keeps its
# journal of changes to the server itself ($GHBENCH_HOME/changes): setup
# neither leaves the server alone for it nor undoes it.
GHBENCH_RESTART_BY_GHBENCH=1 bash "$here/setup.sh" "$1" >/dev/null
