#!/usr/bin/env bash
# The MySQL family beside PostgreSQL (issue 39's benchmark): HOURS x EVENTS
# generated events (default 40 x 25,000 = 1M) in one `ghbench bench` run,
# true cold and hot, every answer verified: mysql and mysql-tuned on MariaDB
# against postgres, postgres-tuned and normalized; query times, load time
# (wall) and size on disk, and each setup's plans (in the record). MariaDB
# stores JSON as text: its numbers say nothing of MySQL 8's.
# Usage: scripts/bench-mysql.sh [HOURS] [EVENTS_PER_HOUR] [REPEAT]   (via `just bench-mysql`)
source "$(dirname "$0")/bench-common.sh" "$@"
mkdir -p "$work/results"
record="$work/results/mysql-${hours}h.json"
echo "== bench-mysql: $hours hours x $events events, $repeat hot runs per query after a true cold one"
ghbench_step "$work/bench.txt" "the bench" bench --hours "$hours" --events-per-hour "$events" --seed 42 --repeat "$repeat" \
    --cold --variant corrected --engines postgres,postgres-tuned,normalized,mysql,mysql-tuned --table mysqlbench \
    --data-dir "$work/data" --quarantine-dir "$work/q" --output "$work/results" --json "$record"
cat "$work/bench.txt"
echo "record: $record"
