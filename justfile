# ghbench tasks. `just --list` shows them.
set shell := ["bash", "-euo", "pipefail", "-c"]

# Where cargo puts the release binary (CI keeps CARGO_TARGET_DIR outside the clone).
ghbench := env_var_or_default("CARGO_TARGET_DIR", justfile_directory() + "/target") + "/release/ghbench"

# Start (installing when missing) PostgreSQL, a MongoDB-wire server and MariaDB (MySQL 8 when on PATH) for this checkout.
setup:
    bash scripts/setup.sh

# Stop the servers started by `just setup` (their data stays in .ghbench/).
down:
    bash scripts/down.sh

# Build the ghbench binary (release).
build:
    cargo build --release

# Check the servers setup started answer (the Citus cluster too, where it runs) and show what they are.
doctor: setup build
    source .ghbench/env && {{ghbench}} doctor --engines "postgres,mongo,mysql${CITUS_URL:+,citus}"

# Load the shared real hour into every engine (jsonb, MongoDB-wire, normalized, polars),
# build the paper's indexes and run Queries A-D on all four (results in results/).
[doc("Load the real hour into every engine, build the paper's indexes, run Queries A-D")]
demo: setup build
    source .ghbench/env && {{ghbench}} ingest --engines postgres,mongo,normalized,polars --source ../shared/data/gharchive --from 2015-01-01T00 --to 2015-01-01T00
    source .ghbench/env && {{ghbench}} index --engines postgres,mongo,normalized,polars
    source .ghbench/env && {{ghbench}} query --all --repeat 3 --engines postgres,mongo,normalized,polars

# The test suite, against the real servers `just setup` starts.
test: setup
    source .ghbench/env && cargo test --workspace --all-targets

# Side-by-side ingest speed: ghbench vs psql \copy, vs pymongo, vs zcat; peak memory.
bench-ingest hours="8": setup build
    bash scripts/bench-ingest.sh {{hours}}

# jsonb against the normalized layout on the same PostgreSQL: 1M generated
# events loaded both ways, Queries A-D hot, medians, ratios, load cost, sizes.
[doc("jsonb against the normalized layout on the same PostgreSQL, 1M events")]
bench-normalized hours="40" events="25000" repeat="5": setup build
    bash scripts/bench-normalized.sh {{hours}} {{events}} {{repeat}}

# The embedded polars engine against DuckDB on the same Parquet files (1M generated
# events by default): Queries A-D hot, medians of 5, ratio; load time and size
# of the Parquet files beside PostgreSQL's and MongoDB's.
[doc("polars against DuckDB on the same Parquet files, 1M events")]
bench-polars hours="40" events="25000" repeat="5": setup build
    bash scripts/bench-polars.sh {{hours}} {{events}} {{repeat}}

# What a file per hour costs polars: the same 175,000 generated events as 7, 876 and
# 8,760 hour files, ghbench's part (ledger, listing, checks) and polars' part of a
# query split, hot and cold (root), then `ghbench query` end to end on each.
[doc("What a file per hour costs polars: 7, 876 and 8,760 hour files")]
bench-polars-hours hours="7" events="25000" repeat="5": build
    bash scripts/bench-polars-hours.sh {{hours}} {{events}} {{repeat}}

# The year end to end: `ingest --year 2015` on every engine from a local HTTP mirror of the
# same 175,000 generated events as 8,760 hour files, killed with SIGKILL part way and run
# again; indexes; Queries A-D over the year beside the same events in 7 hour files:
# per-hour load cost, exactly once, hot medians, answers compared whole.
[doc("The year end to end from a local mirror, killed part way and run again")]
bench-year hours="7" events="25000" repeat="3": setup build
    bash scripts/bench-year.sh {{hours}} {{events}} {{repeat}}

# Paper setups against tuned ones, 1M events, true cold and hot, verified: ratios, load, size.
# (The MongoDB-wire setups run at 250,000 events; GHBENCH_TUNED_MONGO_HOURS=40 for 1M.)
[doc("Paper setups against tuned ones, 1M events, true cold and hot, verified")]
bench-tuned hours="40" events="25000" repeat="3": setup build
    bash scripts/bench-tuned.sh {{hours}} {{events}} {{repeat}}

# The MySQL family (MariaDB) beside PostgreSQL: mysql and mysql-tuned against postgres,
# postgres-tuned and normalized at 1M events, true cold and hot, verified; load and size.
[doc("MariaDB (mysql, mysql-tuned) beside PostgreSQL's setups, 1M events")]
bench-mysql hours="40" events="25000" repeat="3": setup build
    bash scripts/bench-mysql.sh {{hours}} {{events}} {{repeat}}

# Many clients at once: 1, 2, 4 and 8 clients per engine for 60 s each at 1M events
# (SecantusDB at 25,000): queries per second, its gain over one client, p95, CPU.
[doc("Many clients at once: 1, 2, 4 and 8 per engine, queries per second")]
bench-clients hours="40" events="25000" repeat="3": setup build
    bash scripts/bench-clients.sh {{hours}} {{events}} {{repeat}}

# The paper's regime: 1M generated events loaded once, queried with memory free and
# with the servers inside memory limits where postgres's data is 0.25, 1 and 5 times
# memory (SecantusDB at 100,000 events beside postgres); charts in results/regime/. Root.
[doc("The paper's regime: data 0.25, 1 and 5 times memory (root)")]
bench-regime hours="40" events="25000" repeat="3": setup build
    bash scripts/bench-regime.sh {{hours}} {{events}} {{repeat}}

# Growth with the data: `bench --scale` at 4,8,16 hours of 25,000 generated events
# (100k to 400k), true cold and hot, every answer verified, each size dropped once
# measured, growing pools then fixed ones side by side: slopes of time, answers,
# loads, index builds and bytes; what grew faster than the data.
[doc("Growth with the data: bench --scale at 4,8,16 hours, slopes")]
bench-growth sizes="4,8,16" events="25000" repeat="3": setup build
    bash scripts/bench-growth.sh {{sizes}} {{events}} {{repeat}}

# Ten million events: `bench --scale` at 100,200,400 hours of 25,000 generated
# events (2.5M to 10M) on postgres and polars, 3 true cold and 3 hot runs per
# query, both texts, verified; then the 10M tables at 1x and 5x memory, and on the
# paper's machine (`--preset paper2019` at 1,000 IOPS, published texts). Root;
# about 45 GB of disk. GHBENCH_10M_* and GHBENCH_COLD_REPEAT (scripts/bench-10m.sh)
# choose otherwise.
[doc("Ten million events on postgres and polars, at 1x and 5x memory (root)")]
bench-10m sizes="100,200,400" events="25000" repeat="3": setup build
    bash scripts/bench-10m.sh {{sizes}} {{events}} {{repeat}}

# The paper's OLAP machine: `bench --preset paper2019` at 1M generated events on
# postgres and polars (GHBENCH_PAPER_ENGINES for the other layouts): 5x memory with
# the disk free, at 5,000 and at 1,000 read IOPS (437 and 131 MB/s), the paper's
# planner settings, rounds; events per second beside the paper's. Root.
[doc("The paper's OLAP machine: memory, disk and planner as it had them (root)")]
bench-paper2019 hours="40" events="25000" rounds="3": setup build
    bash scripts/bench-paper2019.sh {{hours}} {{events}} {{rounds}}

# One PostgreSQL against a Citus cluster on the same data (issue 54): postgres, citus
# and citus-tuned at 1M generated events where postgres's data is 5x its memory, every
# Citus node under that memory, then the cluster under it in total, then a cluster of
# one worker; true cold and hot, verified; the side-by-side table. Root; the cluster
# `just setup` starts with GHBENCH_CITUS_SOURCE.
[doc("One PostgreSQL against a Citus cluster at 5x memory, 1M events (root)")]
bench-citus hours="40" events="25000" repeat="3": setup build
    bash scripts/bench-citus.sh {{hours}} {{events}} {{repeat}}

# Criterion microbenchmarks (gzip, cleaning, encodings) on small slices.
bench:
    cargo bench --bench pipeline
