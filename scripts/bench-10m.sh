#!/usr/bin/env bash
# Ten million events (issue 53): what only size shows, in one sitting.
#   1. `bench --scale SIZES` (default 100,200,400 hours of 25,000 generated events:
#      2.5M, 5M and 10M, growing pools) on GHBENCH_10M_ENGINES (default postgres,
#      the paper's jsonb, and polars, which verifies its answers): each size loaded
#      and indexed, then GHBENCH_COLD_REPEAT (default 3) true cold runs of every
#      query, each after its own restart and page-cache drop, and REPEAT hot runs,
#      published and corrected texts, every answer verified; the slopes of time,
#      answers, loads, index builds and bytes, each size's disk need estimated
#      before it loads. The smaller sizes' tables are kept unless
#      GHBENCH_10M_DROP=1 (each size dropped once measured, the largest too).
#   2. Unless GHBENCH_10M_REGIME=0, the largest size's tables again under memory
#      limits of postgres's data ÷ memory GHBENCH_10M_RATIOS (default 1,5), a true
#      cold and REPEAT hot runs of the corrected texts (`--regime` and `--scale`
#      are separate runs on the same tables). Needs root.
#   3. Unless GHBENCH_10M_PAPER=0, the largest size's tables on the paper's machine:
#      `--preset paper2019` narrowed to its 1,000 IOPS point and the published texts
#      (GHBENCH_10M_PAPER_IOPS, default 1000; at 10M each point of both texts takes
#      about an hour), a true cold round and GHBENCH_10M_PAPER_REPEAT (default 1) rounds; its
#      Markdown sets the per-event table beside the paper's. Needs root.
# Records, Markdown, charts and pages go to GHBENCH_10M_OUTPUT (default results/10m).
# The work folder (GHBENCH_BENCH_WORK, default .ghbench/bench-10m, kept: a run
# stopped part way goes on with `bench --resume`, which needs polars' files)
# holds the generated hours (about 5 GB at 10M) and polars' files; the servers'
# data folders hold the tables. Needs root (true cold runs drop the page cache).
# Usage: scripts/bench-10m.sh [SIZES] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-10m`)
sizes=${1:-100,200,400}
shift || true
export GHBENCH_BENCH_WORK=${GHBENCH_BENCH_WORK:-$(cd "$(dirname "$0")/.." && pwd)/.ghbench/bench-10m}
mkdir -p "$GHBENCH_BENCH_WORK"
source "$(dirname "$0")/bench-common.sh" 0 "${1:-25000}" "${2:-3}"
[ "$(id -u)" = 0 ] || { echo "bench-10m needs root: its cold runs drop the page cache and its memory step uses cgroups" >&2; exit 2; }
engines=${GHBENCH_10M_ENGINES:-postgres,polars}
cold_repeat=${GHBENCH_COLD_REPEAT:-3}
ratios=${GHBENCH_10M_RATIOS:-1,5}
out=${GHBENCH_10M_OUTPUT:-results/10m}
largest=$(tr , '\n' <<<"$sizes" | sort -n | tail -1)
mkdir -p "$out/scale" "$out/regime"
drop=()
[ "${GHBENCH_10M_DROP:-0}" = 1 ] && drop=(--drop-measured)
# --pools: growing unless GHBENCH_POOLS says otherwise (bench reads it).
common=(--events-per-hour "$events" --seed 42 --repeat "$repeat" --cold
    --engines "$engines" --table tenm --data-dir "$work/data" --polars-dir "$work/polars" --quarantine-dir "$work/q")
echo "== bench-10m: --scale $sizes hours x $events events on $engines; $cold_repeat true cold and $repeat hot runs per query; $(date -u +%FT%TZ)"
SECONDS=0
status=0
"$bin" bench --scale "$sizes" "${common[@]}" --cold-repeat "$cold_repeat" ${drop[@]+"${drop[@]}"} --output "$out/scale" || status=$?
echo "== bench-10m: the sizes took $SECONDS s (exit status $status)"
[ "$status" = 0 ] || { echo "bench-10m: the sizes ended with exit status $status (see above; \`ghbench --help\` says what each means)" >&2; exit "$status"; }
if [ "${GHBENCH_10M_DROP:-0}" = 1 ]; then
    echo "== bench-10m: no memory step and no paper's machine: GHBENCH_10M_DROP=1 dropped the $largest-hour tables they would query"
elif [ "${GHBENCH_10M_REGIME:-1}" != 0 ]; then
    echo "== bench-10m: $largest hours under memory limits: the first engine's data (${engines%%,*}) at $ratios x memory; $(date -u +%FT%TZ)"
    SECONDS=0
    "$bin" bench --hours "$largest" "${common[@]}" --variant corrected --regime "$ratios" --output "$out/regime" || status=$?
    echo "== bench-10m: the memory step took $SECONDS s (exit status $status)"
fi
if [ "${GHBENCH_10M_DROP:-0}" != 1 ] && [ "${GHBENCH_10M_PAPER:-1}" != 0 ]; then
    paper_iops=${GHBENCH_10M_PAPER_IOPS:-1000}
    echo "== bench-10m: $largest hours on the paper's machine at $paper_iops read IOPS, the published texts; $(date -u +%FT%TZ)"
    mkdir -p "$out/paper2019"
    SECONDS=0
    # --preset sets --rounds and --cold, and refuses --rounds given: not the common options.
    "$bin" bench --preset paper2019 --regime-iops "$paper_iops" --variant published --hours "$largest" \
        --events-per-hour "$events" --seed 42 --repeat "${GHBENCH_10M_PAPER_REPEAT:-1}" --engines "$engines" --table tenm \
        --data-dir "$work/data" --polars-dir "$work/polars" --quarantine-dir "$work/q" --output "$out/paper2019" || status=$?
    echo "== bench-10m: the paper's machine took $SECONDS s (exit status $status)"
fi
[ "$status" = 0 ] || echo "bench-10m: a step ended with exit status $status (see above; \`ghbench --help\` says what each means)" >&2
exit "$status"
