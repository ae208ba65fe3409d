#!/usr/bin/env bash
# Side-by-side ingest numbers on the same hours and the same servers:
#   PostgreSQL: ghbench vs `zcat | sed | psql \copy` per file
#   MongoDB-wire: ghbench vs a pymongo insert_many(ordered=False) loader, batches of 1,000
#   client alone: ghbench --dry-run vs `zcat > /dev/null`
#   peak memory of ghbench ingest for 1 hour and for many hours
# Usage: scripts/bench-ingest.sh [HOURS] [DATA_DIR]   (needs `just setup`; run via `just bench-ingest`)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
hours=${1:-8}
many_hours=${GHBENCH_BENCH_MANY_HOURS:-100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source .ghbench/env
export PGOPTIONS="-c client_min_messages=warning"
bin=$repo/target/release/ghbench
[ -x "$bin" ] || cargo build --release
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get install -y -qq time >/dev/null; }
psql=$(ls /usr/lib/postgresql/*/bin/psql | tail -n1)

# Data: a folder of consecutive hours. Default: copies of the shared real hour.
data=${2:-}
if [ -z "$data" ]; then
    data=$work/hours
    mkdir -p "$data"
    real=$repo/../shared/data/gharchive/2015-01-01-0.json.gz
    [ -f "$real" ] || { echo "no data: pass a folder of hours, or put ../shared beside the repo" >&2; exit 1; }
    for h in $(seq 0 $((many_hours - 1))); do
        day=$((h / 24 + 1)); hour=$((h % 24))
        ln -s "$real" "$data/$(printf '2015-01-%02d' "$day")-$hour.json.gz"
    done
fi
files=()
while IFS= read -r f; do files+=("$f"); done < <(ls "$data"/*.json.gz | sort -V | head -n "$hours")
first=$(basename "${files[0]}" .json.gz)
first_hour="${first:0:10}T$(printf '%02d' "${first:11}")"
events=$(for f in "${files[@]}"; do zcat "$f"; done | wc -l)
mb=$(for f in "${files[@]}"; do zcat "$f"; done | wc -c | awk '{printf "%.1f", $1/1e6}')

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN{printf "%.0f", n/s}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b/a}'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN{print (r>=t) ? "meets" : "MISSES"}'; }
ghbench_ingest() { "$bin" ingest --quarantine-dir "$work/q" --source "$data" --from "$first_hour" --hours "$hours" "$@" >/dev/null 2>&1; }
pg() { "$psql" -q -X "$DATABASE_URL" "$@"; }

echo "== ghbench bench-ingest: $hours hours, $events events, $mb MB JSON from $data"
"$bin" doctor | grep -E '^[a-z]+ +ok' || true
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)"

# -- PostgreSQL
pg -c "DROP TABLE IF EXISTS bench_psql; CREATE TABLE bench_psql (data jsonb)"
t0=$(now)
for f in "${files[@]}"; do
    zcat "$f" | sed 's/\\u0000//g' | pg -c "\copy bench_psql from stdin with (format csv, quote e'\x01', delimiter e'\x02', escape e'\x01')"
done
psql_s=$(elapsed "$t0" "$(now)")
t0=$(now); ghbench_ingest --engines postgres --table bench_ghbench --drop; gh_pg_s=$(elapsed "$t0" "$(now)")
[ "$(pg -tAc 'SELECT count(*) FROM bench_ghbench')" = "$events" ] || { echo "ghbench loaded a wrong count" >&2; exit 1; }
pg -c "DROP TABLE bench_psql; DROP TABLE bench_ghbench; DELETE FROM ghbench_ledger WHERE tbl = 'bench_ghbench'"

# -- MongoDB-wire server
py=$repo/.ghbench/venv/bin/python
if ! "$py" -c 'import pymongo' 2>/dev/null; then
    python3 -m venv "$repo/.ghbench/bench-venv" && "$repo/.ghbench/bench-venv/bin/pip" install -q pymongo
    py=$repo/.ghbench/bench-venv/bin/python
fi
mongo_db=ghbench
t0=$(now); "$py" scripts/pymongo_load.py "$MONGODB_URI" "$mongo_db" bench_pymongo "${files[@]}" >/dev/null; pymongo_s=$(elapsed "$t0" "$(now)")
t0=$(now); ghbench_ingest --engines mongo --table bench_ghbench --drop; gh_mongo_s=$(elapsed "$t0" "$(now)")
"$py" - "$MONGODB_URI" <<'PY'
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1])["ghbench"]
db.bench_pymongo.drop(); db.bench_ghbench.drop(); db.ghbench_ledger.delete_many({"table": "bench_ghbench"})
PY

# -- client alone
t0=$(now); for f in "${files[@]}"; do zcat "$f" >/dev/null; done; zcat_s=$(elapsed "$t0" "$(now)")
t0=$(now); ghbench_ingest --dry-run --table bench_dry; dry_s=$(elapsed "$t0" "$(now)")

# -- peak memory (resident), one hour vs many hours, both engines where affordable
peak() { /usr/bin/time -f %M "$bin" ingest --quarantine-dir "$work/q" --source "$data" --from "$first_hour" "$@" 2>&1 >/dev/null | tail -n1; }
mem_1=$(peak --hours 1 --engines postgres,mongo --table bench_mem1 --drop)
mem_many=$(peak --hours "$many_hours" --engines postgres --table bench_mem2 --drop)
mem_many_dry=$(peak --hours "$many_hours" --dry-run --table bench_mem3)
pg -c "DROP TABLE IF EXISTS bench_mem1; DROP TABLE IF EXISTS bench_mem2; DELETE FROM ghbench_ledger WHERE tbl LIKE 'bench_mem%'"
"$py" -c "
from pymongo import MongoClient; db = MongoClient('$MONGODB_URI')['ghbench']
db.bench_mem1.drop(); db.ghbench_ledger.delete_many({'table': 'bench_mem1'})"

printf '\n%-44s %10s %12s %8s  %s\n' "run ($hours hours, $events events)" "seconds" "events/s" "ratio" "target"
row() { printf '%-44s %10s %12s %8s  %s\n' "$@"; }
row "postgres: zcat|sed|psql \\copy (baseline)" "$psql_s" "$(rate "$events" "$psql_s")" "" ""
r=$(ratio "$gh_pg_s" "$psql_s"); row "postgres: ghbench ingest" "$gh_pg_s" "$(rate "$events" "$gh_pg_s")" "${r}x" "1.5x: $(verdict "$r" 1.5)"
row "mongo: pymongo insert_many (baseline)" "$pymongo_s" "$(rate "$events" "$pymongo_s")" "" ""
r=$(ratio "$gh_mongo_s" "$pymongo_s"); row "mongo: ghbench ingest" "$gh_mongo_s" "$(rate "$events" "$gh_mongo_s")" "${r}x" "1.2x: $(verdict "$r" 1.2)"
row "client: zcat > /dev/null (baseline)" "$zcat_s" "$(rate "$events" "$zcat_s")" "" ""
r=$(ratio "$dry_s" "$zcat_s"); row "client: ghbench ingest --dry-run" "$dry_s" "$(rate "$events" "$dry_s")" "${r}x" "0.5x: $(verdict "$r" 0.5)"
echo
echo "peak RSS: 1 hour (both engines) $((mem_1 / 1024)) MB; $many_hours hours (postgres) $((mem_many / 1024)) MB; $many_hours hours (dry run) $((mem_many_dry / 1024)) MB; target < 300 MB"
echo "(ratios are baseline seconds / ghbench seconds; the MongoDB side is whatever server doctor names above)"
