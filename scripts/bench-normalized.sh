#!/usr/bin/env bash
# jsonb against the normalized layout on the same PostgreSQL, same settings,
# same generated events (issue 9's benchmark):
#   1. `ghbench gen`: HOURS hours of EVENTS events each (default 40 x 25,000 = 1M);
#   2. load them as jsonb, then (a separate run, so neither waits on the other)
#      as normalized; each load ends with VACUUM (ANALYZE), timed in the load;
#   3. `ghbench index` on both (the paper's five indexes, mapped);
#   4. `ghbench query --all --repeat REPEAT` (hot: every run after the first
#      finds the data cached), verified across the two layouts;
#   5. prints per query the medians and their ratio, the load and
#      normalization cost, the sizes on disk, and the plans of queries that
#      miss the issue's targets (B and C 20x, A and D 5x).
# Usage: scripts/bench-normalized.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-normalized`)
source "$(dirname "$0")/bench-common.sh" "$@"
table=bench_normalized
mkdir -p "$work/hours" "$work/results"

echo "== bench-normalized: $hours hours x $events events, $repeat hot runs per query, table $table"
"$bin" doctor --engines postgres | grep -E '^postgres +ok' || true
if ! ls "$work/hours"/*.json.gz >/dev/null 2>&1; then
    "$bin" gen --from 2015-01-01T00 --hours "$hours" --events "$events" --seed 42 --data-dir "$work/hours" | tail -n 1
fi
load() {
    "$bin" ingest --engines "$1" --table "$table" --source "$work/hours" --from 2015-01-01T00 --hours "$hours" \
        --quarantine-dir "$work/q" --drop | grep -E "^($1 |$1:|elapsed)"
}
load postgres
load normalized
"$bin" index --engines postgres,normalized --table "$table" --output "$work/results" | grep -E "^(postgres|normalized) " || true
ghbench_step "$work/query.txt" "the query run" query --all --repeat "$repeat" --engines postgres,normalized --table "$table" \
    --output "$work/results" --json "$work/results/normalized.json"
python3 scripts/bench_normalized_report.py "$work/results/normalized.json"
