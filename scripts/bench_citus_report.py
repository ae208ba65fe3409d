#!/usr/bin/env python3
"""The side-by-side table of `just bench-citus` (scripts/bench-citus.sh): one
PostgreSQL against the Citus cluster on the same data, each configuration a
bench record of its own; or, with --memory-of, the memory limit the first
record's regime point chose (in bytes), for the runs after it.

Usage: bench_citus_report.py --memory-of PER_NODE.json
       bench_citus_report.py PER_NODE.json TOTAL.json ONE_WORKER.json
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def regime_point(record):
    points = (record.get("regime") or {}).get("points") or []
    if not points:
        sys.exit(f"no regime point in the record: was it made with --regime?")
    return points[-1]


def mib(n):
    return f"{n / 1048576:.0f} MiB"


def fit(engine):
    """Memory per node and data ÷ memory on the fullest node, as the record measured them."""
    memory = engine.get("memory") or {}
    nodes = memory.get("nodes") or []
    storage = engine.get("storage") or {}
    if nodes:
        fullest = max(nodes, key=lambda n: n["data_bytes"] / max(n["bytes"], 1))
        limits = sorted({n["bytes"] for n in nodes})
        each = "/".join(mib(b) for b in limits)
        return f"{len(nodes)} nodes, {each} each ({mib(memory['bytes'])} in total)", fullest["data_bytes"] / max(fullest["bytes"], 1)
    data = (storage.get("table_bytes") or 0) + (storage.get("index_bytes") or 0)
    return f"1 server, {mib(memory.get('bytes', 0))}", data / max(memory.get("bytes", 1), 1)


def columns(configs):
    """(column name, run, engine record) for every engine of every configuration."""
    out = []
    for name, run in configs:
        for engine in run["context"]["engines"]:
            out.append((f"{engine['engine']} ({name})", run, engine))
    return out


def result(run, query, variant, engine):
    """The engine's result for the query in the run, None when it has none."""
    for q in run["queries"]:
        if q["query"] == query and q["variant"] == variant:
            for e in q["engines"]:
                if e["engine"] == engine:
                    return e
    return None


def seconds(e, cold):
    if cold:
        c = e.get("cold_run")
        return c.get("seconds") if isinstance(c, dict) else None
    return (e.get("stats") or {}).get("median")


def main(args):
    if args[:1] == ["--memory-of"]:
        print(regime_point(load(args[1]))["memory_bytes"])
        return
    per_node, total, one_worker = (load(p) for p in args)
    configs = [
        ("memory per node", regime_point(per_node)["run"]),
        ("same memory in total", total["sizes"][-1]["run"]),
        ("one worker", one_worker["sizes"][-1]["run"]),
    ]
    cols = columns(configs)
    queries = sorted({(q["query"], q["variant"]) for _, run in configs for q in run["queries"]})
    width = max(len(name) for name, _, _ in cols)
    print(f"{'engine (configuration)':<{width}}  {'memory':<44} data ÷ memory (fullest node)")
    for name, _, engine in cols:
        said, ratio = fit(engine)
        print(f"{name:<{width}}  {said:<44} {ratio:.2f}×")
    print()
    print("seconds: a true cold first run / the hot runs' median")
    print(f"{'':<{width}}" + "".join(f"{query + ' ' + variant:>22}" for query, variant in queries))
    failures = []
    for name, run, engine in cols:
        cells = []
        for query, variant in queries:
            e = result(run, query, variant, engine["engine"])
            if e is not None and e.get("error"):
                # A failed query is a result too: said, with why, below the table.
                cells.append(f"{'failed':>22}")
                failures.append(f"{name}, {query} {variant}: {e['error'][:240]}")
                continue
            cold, hot = (None, None) if e is None else (seconds(e, c) for c in (True, False))
            said = lambda t: "–" if t is None else f"{t:.3f}"
            cells.append(f"{said(cold) + ' / ' + said(hot):>22}")
        print(f"{name:<{width}}" + "".join(cells))
    for failure in failures:
        print(f"failed: {failure}")
    print()
    print(
        "On one 2-core machine the coordinator and the workers share two cores and one disk, and talk over\n"
        "loopback: these runs show what spreading the table does to each node's data ÷ memory and what the\n"
        "coordinator's work costs; they cannot show the cores, disks and memory that more machines would add,\n"
        "nor a network's latency."
    )


if __name__ == "__main__":
    main(sys.argv[1:])
