#!/usr/bin/env bash
# The embedded polars engine against DuckDB on the same Parquet files, and the
# size of those files beside PostgreSQL's and MongoDB's (issue 10's benchmark):
#   1. `ghbench gen`: HOURS hours of EVENTS events each (default 40 x 25,000 = 1M);
#   2. load them into polars (Parquet), PostgreSQL (jsonb) and the MongoDB-wire
#      server, each in a run of its own, so no load waits on another;
#   3. `ghbench query B` on all three engines verifies them at this scale; then
#      `ghbench query --all --cold --repeat REPEAT --engines polars`: Queries A-D,
#      both variants, each once after dropping the OS page cache, then hot;
#   4. DuckDB (PyPI `duckdb`) runs the same SQL files (queries/polars/) on the
#      same files with as many threads as polars had, each once cold (page cache
#      dropped, a new DuckDB) and REPEAT times hot; its answers are checked
#      against polars';
#   5. prints per query both sides' cold run and hot median and their ratios,
#      then load time and size per engine.
# Usage: scripts/bench-polars.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-polars`)
source "$(dirname "$0")/bench-common.sh" "$@"
python=.ghbench/venv/bin/python
"$python" -c 'import duckdb' 2>/dev/null || "$python" -m pip install -q --disable-pip-version-check duckdb
table=bench_polars
data="$work/polars"
mkdir -p "$work/hours" "$work/results"

echo "== bench-polars: $hours hours x $events events, $repeat hot runs per query, table $table"
if ! ls "$work/hours"/*.json.gz >/dev/null 2>&1; then
    "$bin" gen --from 2015-01-01T00 --hours "$hours" --events "$events" --seed 42 --data-dir "$work/hours" | tail -n 1
fi
for engine in polars postgres mongo; do
    "$bin" ingest --engines "$engine" --polars-dir "$data" --table "$table" --source "$work/hours" \
        --from 2015-01-01T00 --hours "$hours" --quarantine-dir "$work/q" --drop | grep -E "^($engine |$engine:|elapsed)"
done
# The check across engines first: the servers settle from their loads before
# polars and DuckDB are timed, one after the other.
ghbench_step "$work/all.txt" "the check across engines" query B --variant corrected --repeat 1 --engines postgres,mongo,polars \
    --polars-dir "$data" --table "$table" --output "$work/results/all" --json "$work/results/all.json"
ghbench_step "$work/polars.txt" "polars' run" query --all --cold --repeat "$repeat" --engines polars --polars-dir "$data" \
    --table "$table" --output "$work/results/polars" --json "$work/results/polars.json"
"$python" scripts/bench_polars.py --repeat "$repeat" --table "$table" --files "$data/$table" \
    --polars "$work/results/polars.json" --sizes "$work/results/all.json"
