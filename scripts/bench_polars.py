"""bench-polars' DuckDB side and its table: runs queries/polars/<variant>/<Q>.sql
with DuckDB on the same Parquet files polars read (a view named like the
table), on as many threads as polars ran on: per query once cold (OS page cache
dropped, a new DuckDB instance) as `ghbench query --cold` ran polars, then
REPEAT times hot. Prints per query polars' cold run and hot median (from the
`ghbench query` record), DuckDB's, their ratios, and whether DuckDB's row count
and first rows match polars'; then load time and size per engine from the
all-engine record."""
import argparse
import glob
import json
import math
import os
import statistics
import time

import duckdb

p = argparse.ArgumentParser()
p.add_argument("--repeat", type=int, default=5)
p.add_argument("--table", required=True)
p.add_argument("--files", required=True, help="the table's folder of Parquet files")
p.add_argument("--polars", required=True, help="results of ghbench query --engines polars")
p.add_argument("--sizes", required=True, help="results of a ghbench query on every engine")
args = p.parse_args()

files = sorted(glob.glob(os.path.join(args.files, "*.parquet")))
record = json.load(open(args.polars))
polars_engine = record["context"]["engines"][0]
# The same threads as polars (POLARS_MAX_THREADS, else the cores), so neither
# side has more of the machine.
recorded = polars_engine["server"]["settings"].get("threads", "")
threads = int(recorded) if recorded.isdigit() and int(recorded) > 0 else os.cpu_count()
cold = record["context"]["cold"]


def connect():
    """A new DuckDB instance: nothing cached from an earlier one."""
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(f"CREATE VIEW {args.table} AS SELECT * FROM read_parquet({files!r})")
    return con


def drop_page_cache():
    """As `ghbench query --cold` does before polars' first run (needs root);
    False when it cannot."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


# Cold is compared only when both sides' first runs followed a dropped cache.
cold_both = drop_page_cache() and any(a.startswith("OS page cache dropped") for a in cold.get("actions", []))


print(f"polars: {polars_engine['server']['build']}; settings: "
      + " ".join(f"{k}={v}" for k, v in sorted(polars_engine["server"]["settings"].items())))
duck_threads = connect().execute("SELECT current_setting('threads')").fetchone()[0]
print(f"DuckDB {duckdb.__version__} (Python), threads={duck_threads}; "
      f"both on {len(files)} Parquet files, {polars_engine['data']['events']} events")
print(f"cold: one run after dropping the OS page cache (polars: {cold['label']}); hot: medians of {args.repeat} runs")
if not cold_both:
    print("the OS page cache could not be dropped for both (run as root, and ghbench query with --cold): "
          "the first runs are shown, not compared")
print()


def same(polars_head, duck_rows):
    """polars' first rows (as ghbench keeps them) against DuckDB's."""
    for mine, theirs in zip(polars_head, duck_rows):
        for a, b in zip(mine, theirs):
            if isinstance(a, float) or isinstance(b, float):
                if a is None or b is None or not math.isclose(a, b, rel_tol=1e-9):
                    return False
            elif a != b:
                return False
    return True


def timed(con, sql):
    started = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return time.perf_counter() - started, rows


print(f"{'':<17}{'------ cold (s) ------':>32}   {'--------- hot (s) ---------':>32}")
print(f"{'query':<6}{'variant':<11}{'polars':>9}{'DuckDB':>9}{'DuckDB/polars':>14}   "
      f"{'polars':>9}{'DuckDB':>9}{'DuckDB/polars':>14}  answers")
slower = []
for q in record["queries"]:
    mine = q["engines"][0]
    sql = open(os.path.join("queries", mine["file"])).read().replace("{table}", args.table)
    drop_page_cache()
    con = connect()
    duck_cold, rows = timed(con, sql)
    seconds = [timed(con, sql)[0] for _ in range(args.repeat)]
    duck, pol = statistics.median(seconds), mine["stats"]["median"]
    pol_cold = (mine.get("cold_run") or {}).get("seconds")
    # The published texts leave ties unordered: only their counts compare.
    agree = len(rows) == mine["rows"] and (q["variant"] != "corrected" or same(mine["head"], rows))
    name = f"{q['query']} {q['variant']}"
    if pol > duck:
        slower.append(f"{name} hot")
    if cold_both and pol_cold is not None and pol_cold > duck_cold:
        slower.append(f"{name} cold")
    cold_cells = (f"{pol_cold:>9.4f}{duck_cold:>9.4f}{duck_cold / max(pol_cold, 1e-9):>13.2f}x" if pol_cold is not None
                  else f"{'-':>9}{duck_cold:>9.4f}{'-':>14}")
    print(f"{q['query']:<6}{q['variant']:<11}{cold_cells}   {pol:>9.4f}{duck:>9.4f}{duck / max(pol, 1e-9):>13.2f}x  "
          f"{'same' if agree else 'DIFFER'} ({len(rows)} rows)")
print()
print("polars no slower than DuckDB on any query, cold or hot" if not slower
      else f"polars slower than DuckDB on: {', '.join(slower)}")
print()
sizes = json.load(open(args.sizes))
for e in sizes["context"]["engines"]:
    d, s = e.get("data") or {}, e.get("storage") or {}
    load = d.get("load_seconds") or 0
    print(f"{e['engine']:<9} {e['server']['label']:<40} load {load:7.1f} s {d.get('events', 0) / max(load, 1e-9):8.0f} events/s; "
          f"data {s.get('table_bytes', 0) / 1e6:8.1f} MB + indexes {s.get('index_bytes', 0) / 1e6:7.1f} MB")
status = sizes["queries"][0]["verification"]["status"]
print(f"Query B corrected on every engine at this scale: {status}")
