"""bench-polars' DuckDB side and its table: runs queries/polars/<variant>/<Q>.sql
with DuckDB on the same Parquet files polars read (a view named like the
table), REPEAT times each, and prints per query polars' median (from the
`ghbench query` record), DuckDB's, their ratio, and whether DuckDB's row count
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
con = duckdb.connect()
con.execute(f"CREATE VIEW {args.table} AS SELECT * FROM read_parquet({files!r})")
threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
record = json.load(open(args.polars))
polars_engine = record["context"]["engines"][0]
print(f"polars: {polars_engine['server']['build']}; settings: "
      + " ".join(f"{k}={v}" for k, v in sorted(polars_engine["server"]["settings"].items())))
print(f"DuckDB {duckdb.__version__} (Python), threads={threads}; both on {len(files)} Parquet files, "
      f"{polars_engine['data']['events']} events; medians of {args.repeat} hot runs")
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


print(f"{'query':<6}{'variant':<11}{'polars s':>10}{'DuckDB s':>10}{'DuckDB/polars':>15}  answers")
slower = []
for q in record["queries"]:
    mine = q["engines"][0]
    sql = open(os.path.join("queries", mine["file"])).read().replace("{table}", args.table)
    seconds, rows = [], None
    for _ in range(args.repeat):
        started = time.perf_counter()
        rows = con.execute(sql).fetchall()
        seconds.append(time.perf_counter() - started)
    duck, pol = statistics.median(seconds), mine["stats"]["median"]
    # The published texts leave ties unordered: only their counts compare.
    agree = len(rows) == mine["rows"] and (q["variant"] != "corrected" or same(mine["head"], rows))
    if pol > duck:
        slower.append(f"{q['query']} {q['variant']}")
    print(f"{q['query']:<6}{q['variant']:<11}{pol:>10.4f}{duck:>10.4f}{duck / pol:>14.2f}x  "
          f"{'same' if agree else 'DIFFER'} ({len(rows)} rows)")
print()
print("polars no slower than DuckDB on every query" if not slower
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
