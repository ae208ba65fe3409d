#!/usr/bin/env bash
# The paper's regime (issue 36): the verdict as a function of data ÷ memory,
# side by side in one run per server family, true cold and hot, verified:
#   1. HOURS x EVENTS generated events (default 40 x 25,000 = 1M) loaded once into
#      postgres (the paper's jsonb), postgres-tuned, normalized and polars, queried
#      with memory free, then with the servers and polars' workers inside memory
#      cgroups chosen so postgres's data (table and indexes) is 0.25, 1 and 5 times
#      its memory (GHBENCH_REGIME_RATIOS);
#   2. the MySQL family (MariaDB: mysql and mysql-tuned) beside postgres at the
#      same size and ratios of postgres's data (GHBENCH_REGIME_MYSQL_RATIOS);
#   3. the MongoDB-wire server beside postgres (its answers verified against
#      PostgreSQL's) at MONGO_HOURS x EVENTS (default 4 x 25,000 = 100,000:
#      SecantusDB is a Python server about 30x slower than PostgreSQL here), at the
#      ratios of postgres's data it can reach there (GHBENCH_REGIME_MONGO_RATIOS,
#      default 0.25 and 1: at 5x the limit is under the 64 MiB a server needs).
# Each run prints its tables (bytes per event, hot medians at every memory, the
# kernel's counters under each limit) and writes its record, Markdown, charts and
# page to results/regime/. Needs root (memory cgroups; see `ghbench bench --help`).
# Usage: scripts/bench-regime.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-regime`)
source "$(dirname "$0")/bench-common.sh" "$@"
ratios=${GHBENCH_REGIME_RATIOS:-0.25,1,5}
mongo_hours=${GHBENCH_REGIME_MONGO_HOURS:-4}
mongo_ratios=${GHBENCH_REGIME_MONGO_RATIOS:-0.25,1}
mysql_ratios=${GHBENCH_REGIME_MYSQL_RATIOS:-$ratios}
out=${GHBENCH_REGIME_OUTPUT:-results/regime}
mkdir -p "$out"
[ "$(id -u)" = 0 ] || { echo "bench-regime needs root: memory limits are cgroups (run it as root, or see --server-memory)" >&2; exit 2; }

sweep() { # hours engines ratios
    echo "== bench-regime: $1 hours x $events events, $2, data ÷ memory $3 of postgres's data; $repeat hot runs after a true cold one"
    "$bin" bench --hours "$1" --events-per-hour "$events" --seed 42 --repeat "$repeat" --cold --variant corrected \
        --engines "$2" --regime "$3" --table regime --data-dir "$work/data" --polars-dir "$work/polars" \
        --quarantine-dir "$work/q" --output "$out"
}
status=0
sweep "$hours" postgres,postgres-tuned,normalized,polars "$ratios" || status=$?
echo
sweep "$hours" postgres,mysql,mysql-tuned "$mysql_ratios" || status=$?
echo
sweep "$mongo_hours" postgres,mongo "$mongo_ratios" || status=$?
exit "$status"
