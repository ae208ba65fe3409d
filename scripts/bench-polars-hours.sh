#!/usr/bin/env bash
# What a file per hour costs polars (issue 52): the same events in 7, 876 and
# 8,760 hour files (GHBENCH_HOURS_SPLITS), each loaded (and so merged into
# segments where 24 hours or more: the bench's own output says how many files
# each table holds), hot and cold, split in two:
#   1. `ghbench gen`: HOURS hours of EVENTS events (default 7 x 25,000 = 175,000);
#   2. `ghbench gen --split`: those very events as each number of hour files,
#      from 2015-01-01T00 (8,760: the year 2015), each loaded into a polars table;
#   3. the `polars_hours` bench (built from this checkout, as the default $bin
#      is; GHBENCH_BIN changes steps 1, 2 and 4 only): per table and query,
#      ghbench's part (the ledger read, the listing, a stat per file: once per
#      run) and polars' part (a timed run: the scan set up, planning, opening
#      the files, footers, the scan), hot (median of REPEAT) and cold (page
#      cache dropped; root only);
#   4. `ghbench query --all --variant corrected --repeat REPEAT` on each table
#      (with --cold as root), end to end as users run it (in the worker): cold
#      run and hot median per query, and their ratio to the fewest files'.
# Usage: scripts/bench-polars-hours.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-polars-hours`)
source "$(dirname "$0")/bench-common.sh" "${1:-7}" "${2:-25000}" "${3:-5}"
splits=${GHBENCH_HOURS_SPLITS:-7,876,8760}
mkdir -p "$work/results"
echo "== bench-polars-hours: $hours x $events events as $splits hour files; $repeat hot runs per query"
[ -f "$work/source/gen-manifest.json" ] || "$bin" gen --from 2015-01-01T00 --hours "$hours" --events "$events" --seed 42 --data-dir "$work/source" | tail -n 1
tables=()
for n in ${splits//,/ }; do
    "$bin" gen --split "$work/source"/*.json.gz --from 2015-01-01T00 --hours "$n" --data-dir "$work/split-$n"
    ghbench_step "$work/load-$n.txt" "loading $n hours" ingest --engines polars --polars-dir "$work/polars" --table "hours_$n" \
        --source "$work/split-$n" --from 2015-01-01T00 --hours "$n" --quarantine-dir "$work/q"
    grep -E "^elapsed" "$work/load-$n.txt" | sed "s/^/$n hours: /" || true
    tables+=("$work/polars/hours_$n")
done
echo "== the two parts, in one process (cargo bench --bench polars_hours)"
(IFS=,; GHBENCH_HOURS_TABLES="${tables[*]}" GHBENCH_HOURS_REPEAT="$repeat" cargo bench --quiet --bench polars_hours)
echo "== end to end: ghbench query, in the worker"
cold=()
if [ "$(id -u)" = 0 ]; then cold=(--cold); else echo "(not root: no cold runs, the page cache cannot be dropped)"; fi
for n in ${splits//,/ }; do
    ghbench_step "$work/query-$n.txt" "querying $n hours" query --all --variant corrected "${cold[@]}" --repeat "$repeat" --engines polars \
        --polars-dir "$work/polars" --table "hours_$n" --output "$work/results" --json "$work/results/hours-$n.json"
done
python3 - "$work/results" ${splits//,/ } <<'PY'
import json, statistics, sys
folder, splits = sys.argv[1], sorted(sys.argv[2:], key=int)
def times(n):
    record = json.load(open(f"{folder}/hours-{n}.json"))
    out = {}
    for q in record["queries"]:
        r = next(e for e in q["engines"] if e["engine"] == "polars")
        cold = (r.get("cold_run") or {}).get("seconds")
        out[q["query"]] = (cold, r["stats"]["median"])
    return record["context"]["started_at"], out
fewest = times(splits[0])[1]
print(f"{'hours':>7} {'query':>5} {'cold s':>9} {'÷ ' + splits[0]:>7} {'hot s':>9} {'÷ ' + splits[0]:>7}")
for n in splits:
    _, got = times(n)
    for query, (cold, hot) in sorted(got.items()):
        base_cold, base_hot = fewest[query]
        ratio = lambda a, b: f"{a / b:.2f}" if a and b else "–"
        cold_said = f"{cold:.4f}" if cold is not None else "–"
        print(f"{n:>7} {query:>5} {cold_said:>9} {ratio(cold, base_cold):>7} {hot:>9.4f} {ratio(hot, base_hot):>7}")
PY
echo "records: $work/results/hours-*.json"
