#!/usr/bin/env bash
# Many clients at once (issue 25's benchmark), each size in one `ghbench bench`
# run, every answer under load checked against the verified single-client one:
#   1. HOURS x EVENTS generated events (default 40 x 25,000 = 1M) on postgres
#      (the paper's setup), postgres-tuned, normalized and polars: REPEAT
#      single-client runs per corrected query, then CLIENTS clients at once
#      (default 1,2,4,8) for DURATION seconds each after a 5 s warm-up;
#   2. the MongoDB-wire server at MONGO_HOURS x EVENTS (default 1 x 25,000:
#      SecantusDB answers A-C in about a second there), beside postgres so its
#      answers are verified against PostgreSQL's;
#   3. per engine, queries per second and p95 latency at each client count,
#      the gain over one client, ghbench's own CPU and the machine's.
# Usage: scripts/bench-clients.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-clients`)
# Environment: GHBENCH_CLIENTS (1,2,4,8), GHBENCH_CLIENTS_DURATION (60),
# GHBENCH_CLIENTS_MONGO_HOURS (1), GHBENCH_BENCH_WORK (keep the work folder).
source "$(dirname "$0")/bench-common.sh" "${1:-40}" "${2:-25000}" "${3:-3}"
clients=${GHBENCH_CLIENTS:-1,2,4,8}
duration=${GHBENCH_CLIENTS_DURATION:-60}
mongo_hours=${GHBENCH_CLIENTS_MONGO_HOURS:-1}

bench() { # hours engines results
    mkdir -p "$3"
    local record="$3/clients-$1h.json"
    ghbench_step "$work/bench.txt" "the bench" bench --hours "$1" --events-per-hour "$events" --seed 42 --repeat "$repeat" \
        --variant corrected --clients "$clients" --duration "$duration" --engines "$2" --table clients \
        --data-dir "$work/data" --polars-dir "$work/polars" --quarantine-dir "$work/q" --output "$3" --json "$record"
    python3 scripts/bench_clients_report.py "$record"
}
echo "== bench-clients: $hours hours x $events events, clients $clients, $duration s each (MongoDB-wire: $mongo_hours hours)"
bench "$hours" postgres,postgres-tuned,normalized,polars "$work/results"
echo
bench "$mongo_hours" postgres,mongo,mongo-tuned "$work/results-mongo"
