"""Prints bench-normalized's table from a `ghbench query` results file:
per query the hot medians of jsonb and normalized and their ratio against
the issue's target, then load cost and sizes, then the plans of misses."""
import json
import sys

TARGETS = {"A": 5, "B": 20, "C": 20, "D": 5}

record = json.load(open(sys.argv[1]))
engines = {e["engine"]: e for e in record["context"]["engines"]}
jsonb, norm = engines["postgres"], engines["normalized"]
server = jsonb.get("server") or {}
print(f"server: {server.get('label', '?')}; settings: "
      + " ".join(f"{k}={v}" for k, v in sorted(server.get("settings", {}).items())))
print(f"data: {jsonb['data']['events']} events, {jsonb['data']['hours']} hours "
      f"(normalized holds {norm['data']['events']})")
print()
print(f"{'query':<6}{'variant':<11}{'jsonb median s':>15}{'normalized s':>14}{'ratio':>9}{'target':>8}  verified")
misses = []
for q in record["queries"]:
    runs = {e["engine"]: e for e in q["engines"]}
    a, b = runs["postgres"]["stats"]["median"], runs["normalized"]["stats"]["median"]
    ratio = a / b if b > 0 else float("inf")
    target = TARGETS[q["query"]]
    meets = ratio >= target
    if not meets and q["variant"] == "corrected":
        misses.append((q, runs))
    print(f"{q['query']:<6}{q['variant']:<11}{a:>15.4f}{b:>14.4f}{ratio:>8.1f}x{target:>7}x  "
          f"{q['verification']['status']}{'' if meets else '  (misses target)'}")
print()
for name, e in (("jsonb", jsonb), ("normalized", norm)):
    d, s = e["data"], e["storage"]
    print(f"{name:<11} load {d.get('load_seconds') or 0:8.1f} s (of which VACUUM (ANALYZE) {d.get('upkeep_seconds') or 0:.1f} s), "
          f"{d['events'] / max(d.get('load_seconds') or 1e-9, 1e-9):8.0f} events/s; "
          f"on disk {s['table_bytes'] / 1e6:8.1f} MB tables + {s['index_bytes'] / 1e6:7.1f} MB indexes")
lj, ln = jsonb["data"].get("load_seconds") or 0, norm["data"].get("load_seconds") or 0
print(f"normalization cost: loading normalized took {ln / max(lj, 1e-9):.2f}x the jsonb load "
      f"({ln - lj:+.1f} s), to weigh against the query gains")
for q, runs in misses:
    print(f"\n== plan of {q['query']} {q['variant']} (normalized), which gains less than {TARGETS[q['query']]}x:")
    plan = runs["normalized"].get("plan") or {}
    # The estimated plan (the default) is EXPLAIN (FORMAT JSON); --analyze-plans' is text.
    print(plan.get("text") or (json.dumps(plan["json"], indent=1) if plan.get("json") else "(no plan)"))
