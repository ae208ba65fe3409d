"""Prints bench-tuned's tables from a `ghbench bench` record (its largest size):
per query each setup against the one it changes (cold and hot medians, how
many times faster), tuned jsonb against normalized, then each engine's load,
index build and size, and what the tuned setups' plans used."""
import json
import sys

record = json.load(open(sys.argv[1]))
size = record["sizes"][-1]
run = size["run"]
engines = {e["engine"]: e for e in run["context"]["engines"]}
first = next(iter(engines.values()))
print(f"{size['hours']} hours, {first['data']['events']} events; {run['context']['cold']['label']}")
for name, e in engines.items():
    server = e.get("server") or {}
    setup = e.get("setup") or {}
    print(f"  {name:<15} {server.get('label', '?')}; setup {setup.get('name', '-')}")
print()

def median(r):
    return (r.get("stats") or {}).get("median")

def cold(r):
    return (r.get("cold_run") or {}).get("seconds")

def times(a, b):
    return f"{a / b:8.1f}x" if a and b else "       -"

pairs = [(e["setup"]["of"], name) for name, e in engines.items() if (e.get("setup") or {}).get("of") in engines]
print(f"{'query':<6}{'setup':<16}{'paper cold s':>13}{'tuned cold s':>13}{'cold':>9}{'paper hot s':>12}{'tuned hot s':>12}{'hot':>9}  verified")
for q in run["queries"]:
    runs = {r["engine"]: r for r in q["engines"]}
    for paper, tuned in pairs:
        p, t = runs[paper], runs[tuned]
        print(f"{q['query']:<6}{tuned:<16}{cold(p) or 0:>13.4f}{cold(t) or 0:>13.4f}{times(cold(p), cold(t))}"
              f"{median(p) or 0:>12.4f}{median(t) or 0:>12.4f}{times(median(p), median(t))}  {q['verification']['status']}")
if "postgres-tuned" in engines and "normalized" in engines:
    print(f"\n{'query':<6}{'tuned jsonb hot s':>18}{'normalized hot s':>18}{'tuned / normalized':>20}")
    for q in run["queries"]:
        runs = {r["engine"]: r for r in q["engines"]}
        a, b = median(runs["postgres-tuned"]), median(runs["normalized"])
        print(f"{q['query']:<6}{a or 0:>18.4f}{b or 0:>18.4f}{(a / b if a and b else 0):>19.2f}x")

print(f"\n{'engine':<16}{'load s':>9}{'events/s':>10}{'of which upkeep s':>18}{'indexes s':>10}{'table MB':>10}{'indexes MB':>11}  sizes from")
indexes = {i["engine"]: i for i in size["indexes"]}
for load in size["loads"]:
    name = load["engine"]
    storage = engines[name].get("storage") or {}
    built = sum(b["seconds"] for b in indexes.get(name, {}).get("indexes", []))
    print(f"{name:<16}{load.get('seconds') or 0:>9.1f}{load.get('events_per_second') or 0:>10.0f}{load.get('upkeep_seconds') or 0:>18.1f}"
          f"{built:>10.1f}{storage.get('table_bytes', 0) / 1e6:>10.1f}{storage.get('index_bytes', 0) / 1e6:>11.1f}  {storage.get('sizes_from') or ''}")

for name in [t for _, t in pairs]:
    print(f"\n{name}: what each query's plan used")
    for q in run["queries"]:
        r = next(r for r in q["engines"] if r["engine"] == name)
        plan = r.get("plan") or {}
        text = plan.get("text") or ""
        nodes = [l.strip().split("  (cost")[0].lstrip("-> ") for l in text.splitlines() if "Scan" in l]
        if not nodes and plan.get("json"):
            stages = []
            def walk(v):
                if isinstance(v, dict):
                    # PostgreSQL's estimated plan (EXPLAIN (FORMAT JSON)): its scans, e.g. "Index Only Scan on x".
                    if "Scan" in v.get("Node Type", ""):
                        stages.append(f"{v['Node Type']} on {v.get('Index Name') or v.get('Relation Name', '?')}")
                    if "winningPlan" in v and not stages:  # the first one (mongos: the first shard's)
                        w = v["winningPlan"]
                        while isinstance(w, dict):
                            stages.append(w.get("stage", "?"))
                            w = w.get("inputStage") or w.get("queryPlan")
                    for x in v.values():
                        walk(x)
                elif isinstance(v, list):
                    for x in v:
                        walk(x)
            walk(plan["json"])
            nodes = [" <- ".join(stages[:4])] if stages else []
        print(f"  {q['query']} {q['variant']}: indexes {plan.get('indexes')}; {'; '.join(nodes[:3]) or plan.get('error') or 'no plan'}")
