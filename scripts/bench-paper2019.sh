#!/usr/bin/env bash
# The paper's OLAP machine (issue 51): `ghbench bench --preset paper2019` at
# HOURS x EVENTS generated events (default 40 x 25,000 = 1M) on postgres, the
# paper's jsonb, and polars, which verifies its answers (GHBENCH_PAPER_ENGINES for
# others, e.g. postgres,postgres-tuned,normalized,mysql,mysql-tuned,polars): loaded
# once with the paper's planner settings, queried with memory free, then at 5x
# memory with the disk free, at 5,000 and at 1,000 read IOPS (437 and 131 MB/s:
# 128 KiB reads), in rounds after a true
# cold round, published and corrected texts, every answer verified. The record,
# Markdown (with each query's events per second beside the paper's), charts and
# page go to results/paper2019/. Needs root (memory and block I/O cgroups).
# Usage: scripts/bench-paper2019.sh [HOURS] [EVENTS_PER_HOUR] [ROUNDS]   (via `just bench-paper2019`)
source "$(dirname "$0")/bench-common.sh" "$@"
engines=${GHBENCH_PAPER_ENGINES:-postgres,polars}
out=${GHBENCH_PAPER_OUTPUT:-results/paper2019}
mkdir -p "$out"
[ "$(id -u)" = 0 ] || { echo "bench-paper2019 needs root: its memory and disk limits are cgroups (run it as root)" >&2; exit 2; }
echo "== bench-paper2019: $hours hours x $events events on $engines, the paper's machine (ghbench bench --help, --preset); $repeat rounds after a true cold one"
"$bin" bench --preset paper2019 --hours "$hours" --events-per-hour "$events" --seed 42 --repeat "$repeat" \
    --engines "$engines" --table paper --data-dir "$work/data" --polars-dir "$work/polars" \
    --quarantine-dir "$work/q" --output "$out"
