#!/usr/bin/env bash
# One PostgreSQL against a Citus cluster on the same data (issue 54), true cold
# and hot, every answer verified, each configuration one bench:
#   1. postgres, citus and citus-tuned with memory free, then under a limit M
#      chosen so postgres's data (table and indexes) is RATIO times it
#      (GHBENCH_CITUS_RATIO, 5 by default: the paper's regime), every Citus node
#      under M too (the same memory per node);
#   2. the same under M in total: each of the cluster's nodes under its share
#      (GHBENCH_CITUS_MEMORY=total);
#   3. a cluster of one worker, of this run's own (GHBENCH_CITUS_ONE_PORT,
#      by default ten above the coordinator's, 54340, and the port after it),
#      each node under M.
# Then the side by side table (scripts/bench_citus_report.py). Needs root
# (memory cgroups) and the cluster `just setup` starts (GHBENCH_CITUS_SOURCE).
# At 5x a node's share of M must stay above 64 MiB: M at least 192 MiB, so
# postgres's data at least about 1 GB (the default 1M events are about 1.5 GB).
# Records, Markdown, charts and pages go to GHBENCH_CITUS_OUTPUT (default results/citus).
# Each step pins GHBENCH_CITUS_MEMORY, whatever the environment or setup says.
# Usage: scripts/bench-citus.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-citus`)
source "$(dirname "$0")/bench-common.sh" "$@"
ratio=${GHBENCH_CITUS_RATIO:-5}
# Ten above the cluster's coordinator: beside this checkout's own cluster, whatever port it has.
one_port=${GHBENCH_CITUS_ONE_PORT:-$(( ${GHBENCH_CITUS_PORT:-54330} + 10 ))}
out=${GHBENCH_CITUS_OUTPUT:-results/citus}
[ "$(id -u)" = 0 ] || { echo "bench-citus needs root: memory limits are cgroups" >&2; exit 2; }
[ -n "${CITUS_URL:-}" ] || { echo "bench-citus needs the Citus cluster \`just setup\` starts: run GHBENCH_CITUS_SOURCE=../shared/vendor/citus-13.2.2.tar.gz just setup" >&2; exit 2; }
mkdir -p "$out"
# Its ports free now, not found taken after the two long runs.
for port in "$one_port" "$((one_port + 1))"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "bench-citus: port $port, for its one-worker cluster, is taken: set GHBENCH_CITUS_ONE_PORT to a free port (it takes that one and the next)" >&2; exit 2
    fi
done
# The one-worker cluster is this run's, in a folder its servers (user postgres)
# can enter, so its data stays inside it: stopped and removed however the run ends.
one_home=$(mktemp -d "${TMPDIR:-/tmp}/ghbench-citus-one-worker.XXXXXX")
chmod 755 "$one_home"
trap 'GHBENCH_HOME="$one_home" GHBENCH_CITUS_PORT=$one_port GHBENCH_CITUS_WORKERS=1 bash scripts/down.sh citus >/dev/null 2>&1 || true; rm -rf "$one_home"; [ -n "${GHBENCH_BENCH_WORK:-}" ] || rm -rf "$work"' EXIT
common=(--hours "$hours" --events-per-hour "$events" --seed 42 --repeat "$repeat" --cold --variant corrected
        --table citus_cmp --data-dir "$work/data" --quarantine-dir "$work/q" --output "$out")

# A run whose results cannot be trusted as they stand (exit 1: a query failed,
# say a node out of memory) is a result of the comparison too: said, the runs
# after it still made, and the script ends with 1. Any other failure stops it.
untrusted=0
compare_step() {
    local status=0
    ( ghbench_step "$@" ) || status=$?
    case $status in 0) ;; 1) untrusted=1 ;; *) exit "$status" ;; esac
}

# GHBENCH_CITUS_STEPS (default 1,2,3): the steps to make; a step left out
# has its record in $out from a run before (the limit M is read from step 1's),
# so a failed step is made again without the long ones before it.
steps=${GHBENCH_CITUS_STEPS:-1,2,3}
step() { [[ ",$steps," == *",$1,"* ]]; }
for kept in 1:per-node 2:total 3:one-worker; do
    step "${kept%%:*}" || [ -f "$out/${kept#*:}.json" ] || { echo "bench-citus: step ${kept%%:*} is left out (GHBENCH_CITUS_STEPS=$steps) but its record $out/${kept#*:}.json is not there" >&2; exit 2; }
done

echo "== bench-citus: $hours hours x $events events; postgres's data ${ratio}x memory; $repeat hot runs per query after a true cold one"
if step 1; then
    echo "-- 1/3: the same memory per node"
    GHBENCH_CITUS_MEMORY=each compare_step "$work/per-node.txt" "the run with the same memory per node" bench "${common[@]}" --engines postgres,citus,citus-tuned \
        --regime "$ratio" --json "$out/per-node.json"
fi
memory=$(python3 scripts/bench_citus_report.py --memory-of "$out/per-node.json")
# Each node's share of it must hold a server.
[ $(( memory / 3 )) -ge $((64 << 20)) ] || { echo "bench-citus: the limit the first run chose ($((memory >> 20)) MiB) leaves each of the cluster's 3 nodes less than the 64 MiB a server needs when they share it: give more data (HOURS, EVENTS_PER_HOUR) or a smaller GHBENCH_CITUS_RATIO; the first run's record is in $out" >&2; exit 2; }
if step 2; then
    echo "-- 2/3: the same memory in total ($((memory >> 20)) MiB, the cluster's nodes sharing it)"
    GHBENCH_CITUS_MEMORY=total compare_step "$work/total.txt" "the run with the same memory in total" bench "${common[@]}" \
        --engines postgres,citus,citus-tuned --memory "$((memory >> 10))KiB" --json "$out/total.json"
fi
if step 3; then
    echo "-- 3/3: one worker, each node under $((memory >> 20)) MiB"
    GHBENCH_HOME="$one_home" GHBENCH_CITUS_PORT=$one_port GHBENCH_CITUS_WORKERS=1 GHBENCH_CITUS_MEMORY=each bash scripts/setup.sh citus >"$work/one-worker-setup.txt" 2>&1 \
        || { cat "$work/one-worker-setup.txt"; exit 2; }
    # Its servers.json (`setup.sh citus` writes none): the cluster, restarted as setup.sh restarts it.
    python3 - "$one_home" "$one_port" "$repo" <<'PY'
import json, os, sys
home, port, repo = sys.argv[1:]
restart = ["env", f"GHBENCH_HOME={home}", f"GHBENCH_CITUS_PORT={port}", "GHBENCH_CITUS_WORKERS=1", "GHBENCH_SETUP_CITUS_MEMORY=each",
           "GHBENCH_SETUP_MEMORY=", "GHBENCH_SETUP_DISK=", "GHBENCH_SETUP_PG_PAPER2019=", "bash", f"{repo}/scripts/restart.sh", "citus"]
server = {"name": "citus", "address": f"127.0.0.1:{port}", "data_dir": os.path.realpath(f"{home}/citus/coordinator/data"), "restart": restart}
with open(f"{home}/servers.json", "w") as f:
    json.dump({"written_by": "scripts/bench-citus.sh", "memory": "", "disk": "", "servers": [server]}, f, indent=2)
PY
    one=(--engines citus,citus-tuned --servers "$one_home/servers.json" --citus-url "postgres://ghbench@127.0.0.1:$one_port/ghbench")
    # Loaded with memory free, as step 1 loaded the others (its regime's first
    # point), and measured so: under M the load's sessions got the one worker's
    # backends killed for memory (37 of 40 hours failed at 4 at a time).
    GHBENCH_CITUS_MEMORY=each compare_step "$work/one-free.txt" "the one-worker run with memory free" bench "${common[@]}" "${one[@]}" --json "$out/one-worker-free.json"
    GHBENCH_CITUS_MEMORY=each compare_step "$work/one.txt" "the one-worker run" bench "${common[@]}" "${one[@]}" \
        --memory "$((memory >> 10))KiB" --json "$out/one-worker.json"
fi
python3 scripts/bench_citus_report.py "$out/per-node.json" "$out/total.json" "$out/one-worker.json"
echo "records: $out"
[ "$untrusted" = 0 ] || { echo "bench-citus: a run's results cannot be trusted as they stand (a query failed: see above and the table's 'failed' cells)" >&2; exit 1; }
