#!/usr/bin/env bash
# The year end to end (issue 52): `ghbench ingest --year 2015` from a local
# HTTP mirror, on every engine, killed part way and run again, then the
# indexes and Queries A-D, beside the very same events in a few hour files.
#   1. `ghbench gen`: FEW hours of EVENTS events (default 7 x 25,000 = 175,000);
#   2. `ghbench gen --split`: those events as the year's 8,760 hour files
#      (GHBENCH_YEAR_HOURS: fewer, from 2015-01-01T00; CI runs a month, 744),
#      served over HTTP by `ghbench serve` on a free loopback port, and the FEW
#      hours by another (both loads go the same way: the difference is the files);
#   3. per engine, alone (so each load's time is its own): `ingest --year 2015
#      --source http://...` into table $GHBENCH_YEAR_TABLE (default `year`),
#      killed with SIGKILL once a third of the hours are loaded, then run again
#      to the end (the free space is checked first, from the mirror's sizes);
#      then the FEW hours from their mirror into `<table>_few`;
#   4. `ghbench index`, then `ghbench query --all --variant corrected --repeat
#      REPEAT` on both tables, every engine in one run (answers verified across
#      engines in each);
#   5. per engine: the per-hour load cost, exactly once (the ledger's events
#      against the generated ones, hours skipped and loaded by the rerun, and
#      each table's exact row count against its ledger, which `query` checks), and
#      per query the hot median over the year beside the few hours', with
#      whether the whole answers are the same (their digests).
# GHBENCH_YEAR_ENGINES: the engines (default every one); the records stay in
# $work/results (GHBENCH_BENCH_WORK keeps the work folder).
# Usage: scripts/bench-year.sh [FEW_HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-year`)
source "$(dirname "$0")/bench-common.sh" "${1:-7}" "${2:-25000}" "${3:-3}"
year_hours=${GHBENCH_YEAR_HOURS:-8760}
engines=${GHBENCH_YEAR_ENGINES:-postgres,postgres-tuned,normalized,mysql,mysql-tuned,mongo,mongo-tuned,polars}
table=${GHBENCH_YEAR_TABLE:-year}
few_table=${table}_few
results="$work/results"
mkdir -p "$results"
common=(--polars-dir "$work/polars" --quarantine-dir "$work/q")
if [ "$year_hours" = 8760 ]; then year=(--year 2015); else year=(--from 2015-01-01T00 --hours "$year_hours"); fi

# The mirrors and the load in the background: gone however the script ends
# (a background job starts ignoring Ctrl-C, which ghbench honours).
serve_pids=()
load_pid=
finish() {
    [ -z "$load_pid" ] || kill -9 "$load_pid" 2>/dev/null || true
    for pid in "${serve_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "${GHBENCH_BENCH_WORK:-}" ] || rm -rf "$work"
}
trap finish EXIT

echo "== bench-year: $hours x $events events, as $year_hours hour files over HTTP and as $hours, on $engines; $repeat hot runs per query"
[ -f "$work/few/gen-manifest.json" ] || "$bin" gen --from 2015-01-01T00 --hours "$hours" --events "$events" --seed 42 --data-dir "$work/few" 2>&1 | tail -n 1
"$bin" gen --split "$work/few"/*.json.gz "${year[@]}" --data-dir "$work/year" 2>&1 | tail -n 1

# Serves FOLDER over HTTP and sets $mirror to its address (`serve` says it on its first line).
start_mirror() {
    local log="$work/serve-$(basename "$1").txt"
    : >"$log"
    "$bin" serve "$1" --addr 127.0.0.1:0 >"$log" 2>&1 &
    serve_pids+=($!)
    for _ in $(seq 100); do grep -q '^serving' "$log" && break; sleep 0.1; done
    mirror=$(sed -n 's/^serving .* at \(http[^ ]*\) .*/\1/p' "$log")
    [ -n "$mirror" ] || { cat "$log"; echo "ghbench serve did not start" >&2; exit 2; }
}
start_mirror "$work/year"
url=$mirror
start_mirror "$work/few"
few_url=$mirror
echo "mirrors: $url (the year), $few_url (the $hours hours)"

# Runs `ghbench ingest` for ENGINE in the background and kills it with
# SIGKILL once KILL_AT hours are loaded (its log says each hour). Says how
# long it ran; fails when it ended before it could be killed.
load_killed() {
    local engine=$1 kill_at=$2 log=$3 started loaded=0
    started=$(date +%s.%N)
    : >"$log"
    "$bin" ingest --engines "$engine" --table "$table" --source "$url" "${year[@]}" "${common[@]}" --drop >"$log" 2>&1 &
    load_pid=$!
    while kill -0 "$load_pid" 2>/dev/null; do
        loaded=$(grep -c ' loaded in ' "$log") || loaded=0
        [ "$loaded" -ge "$kill_at" ] && break
        sleep 0.02
    done
    if ! kill -9 "$load_pid" 2>/dev/null; then
        wait "$load_pid" || true
        load_pid=
        cat "$log"
        echo "$engine: the load ended before it was killed ($loaded hours logged); nothing was tested" >&2
        exit 1
    fi
    wait "$load_pid" 2>/dev/null || true
    load_pid=
    python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$started" "$(date +%s.%N)" >"$log.seconds"
}

for engine in ${engines//,/ }; do
    load_killed "$engine" $((year_hours / 3)) "$results/load-$engine-killed.txt"
    ghbench_step "$results/load-$engine-rerun.txt" "$engine: the rerun of the year's load" ingest --engines "$engine" --table "$table" \
        --source "$url" "${year[@]}" "${common[@]}" --json "$results/load-$engine-year.json"
    ghbench_step "$results/load-$engine-few.txt" "$engine: loading the $hours hours" ingest --engines "$engine" --table "$few_table" \
        --source "$few_url" --from 2015-01-01T00 --hours "$hours" "${common[@]}" --drop --json "$results/load-$engine-few.json"
    echo "$engine: loaded (killed after $(cat "$results/load-$engine-killed.txt.seconds") s, then the rerun)"
done

for t in "$table" "$few_table"; do
    ghbench_step "$results/index-$t.txt" "indexing $t" index --engines "$engines" --table "$t" --polars-dir "$work/polars" --output "$results"
    ghbench_step "$results/query-$t.txt" "querying $t" query --all --variant corrected --repeat "$repeat" --engines "$engines" \
        --table "$t" --polars-dir "$work/polars" --output "$results" --json "$results/query-$t.json"
done

python3 "$repo/scripts/bench_year_report.py" "$results" "$work/few/gen-manifest.json" "$engines" "$table" "$few_table" "$hours" "$year_hours" \
    | tee "$results/bench-year.txt"
echo "records: $results"
