#!/usr/bin/env bash
# Growth with the data (issue 53): `bench --scale` at SIZES hours (default
# 4,8,16: 4x apart, the least a fit takes) of EVENTS generated events each,
# true cold and REPEAT hot runs, both query texts, every answer verified, each
# size's tables dropped once measured, first with growing pools (actors and
# repositories that keep arriving) and then with fixed ones (the generator
# before growth), the same seed and sizes. Each run prints and records the
# slopes of the hot and cold times, of the answers' rows, of each engine's
# load, index builds and bytes, the disk each size was estimated to need
# against what it stored, and what grew faster than the data; then a table
# sets the two pools side by side. Engines: GHBENCH_GROWTH_ENGINES (default
# postgres,postgres-tuned,normalized,polars,mysql). Records in
# GHBENCH_GROWTH_OUTPUT (default results/growth).
# Usage: scripts/bench-growth.sh [SIZES] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-growth`)
source "$(dirname "$0")/bench-common.sh" "$@"
sizes=${1:-4,8,16}
engines=${GHBENCH_GROWTH_ENGINES:-postgres,postgres-tuned,normalized,polars,mysql}
out=${GHBENCH_GROWTH_OUTPUT:-results/growth}
mkdir -p "$out/growing" "$out/fixed"
for pools in growing fixed; do
    echo "== bench-growth: --scale $sizes hours x $events events, $pools pools, $engines; true cold then $repeat hot runs"
    status=0
    "$bin" bench --scale "$sizes" --events-per-hour "$events" --seed 42 --pools "$pools" --repeat "$repeat" --cold \
        --drop-measured --engines "$engines" --table growth --data-dir "$work/data" --polars-dir "$work/polars" \
        --quarantine-dir "$work/q" --output "$out/$pools" || status=$?
    # The generated hours of one pool are not the other's: gone once measured.
    rm -rf "$work/data"
    [ "$status" = 0 ] || { echo "bench-growth: the $pools run ended with exit status $status (see above)" >&2; exit "$status"; }
    echo
done
python3 scripts/bench_growth_report.py "$out/growing" "$out/fixed"
