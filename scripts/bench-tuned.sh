#!/usr/bin/env bash
# The paper's setups against the tuned ones (issue 22's benchmark), each size in
# one `ghbench bench` run, true cold and hot, every answer verified:
#   1. HOURS x EVENTS generated events (default 40 x 25,000 = 1M) on the
#      PostgreSQL side and polars: postgres (paper), postgres-tuned, normalized,
#      polars;
#   2. the MongoDB-wire server's two setups at MONGO_HOURS x EVENTS (default
#      10 x 25,000 = 250,000: SecantusDB takes about 40 s a query at 1M, set
#      GHBENCH_TUNED_MONGO_HOURS=40 with a real mongod), beside postgres and
#      postgres-tuned so their answers are verified against PostgreSQL's;
#   3. per query: each setup against its paper setup (cold and hot, how many
#      times faster), tuned jsonb against normalized, then each setup's load
#      time, index build and size on disk, and the tuned plans.
# Usage: scripts/bench-tuned.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-tuned`)
source "$(dirname "$0")/bench-common.sh" "$@"
mongo_hours=${GHBENCH_TUNED_MONGO_HOURS:-10}
mkdir -p "$work/results"

bench() { # hours engines
    local record="$work/results/tuned-$1h-${2//,/-}.json"
    ghbench_step "$work/bench.txt" "the bench" bench --hours "$1" --events-per-hour "$events" --seed 42 --repeat "$repeat" \
        --cold --variant corrected --engines "$2" --table tuned --data-dir "$work/data" --polars-dir "$work/polars" \
        --quarantine-dir "$work/q" --output "$work/results" --json "$record"
    python3 scripts/bench_tuned_report.py "$record"
}
echo "== bench-tuned: $hours hours x $events events (MongoDB-wire: $mongo_hours hours), $repeat hot runs per query after a true cold one"
bench "$hours" postgres,postgres-tuned,normalized,polars
echo
bench "$mongo_hours" postgres,postgres-tuned,mongo,mongo-tuned
