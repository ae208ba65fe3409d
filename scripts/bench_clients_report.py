"""Prints bench-clients' tables from a `ghbench bench` record (its largest size):
per engine, queries per second at each client count and the gain over one
client, p95 latency over the mix, and ghbench's own CPU beside the machine's
(is the client the bottleneck?). A phase that did not stand prints its reason."""
import json
import sys

record = json.load(open(sys.argv[1]))
size = record["sizes"][-1]
run = size["run"]
load = run.get("concurrency")
if not load:
    sys.exit("this record has no concurrency phase (run with --clients)")
engines = {e["engine"]: e for e in run["context"]["engines"]}
first = next(iter(engines.values()))
mix = ", ".join(f"{m['query']} {m['variant']}" for m in load["mix"])
print(f"{size['hours']} hours, {first['data']['events']} events; mix {mix}; "
      f"{load['duration_seconds']:g} s per phase after a {load['warmup_seconds']:g} s warm-up")
for name, e in engines.items():
    print(f"  {name:<15} {(e.get('server') or {}).get('label', '?')}")
print()

phases = {}
for p in load["phases"]:
    phases.setdefault(p["engine"], {})[p["clients"]] = p
counts = load["clients"]

def stands(p):
    return p and not p.get("error") and p["wrong_answers"] == 0 and p["failed_queries"] == 0

def cell(p, value, width):
    return f"{value(p):>{width}}" if stands(p) else f"{'failed' if p else '-':>{width}}"

head = "".join(f"{str(c) + ' cl':>16}" for c in counts)
print(f"{'queries per second (gain over 1 client)':<40}")
print(f"{'engine':<16}{head}")
for engine, by in phases.items():
    one = by.get(counts[0])
    def rate(p):
        gain = f" ({p['queries_per_second'] / one['queries_per_second']:.2f}x)" if stands(one) and one["queries_per_second"] else ""
        return f"{p['queries_per_second']:.2f}{gain}"
    print(f"{engine:<16}" + "".join(cell(by.get(c), rate, 16) for c in counts))

print(f"\n{'p95 latency s over the mix (p50)':<40}")
print(f"{'engine':<16}{head}")
for engine, by in phases.items():
    print(f"{engine:<16}" + "".join(cell(by.get(c), lambda p: f"{p['latency']['p95']:.3f} ({p['latency']['p50']:.3f})", 16) for c in counts))

print(f"\n{'CPU: ghbench / whole machine':<40}")
print(f"{'engine':<16}{head}")
for engine, by in phases.items():
    def cpu(p):
        c = p.get("client_cpu")
        if not c:
            return "?"
        busy = f"{c['machine_busy']:.0%}" if c.get("machine_busy") is not None else "?"
        return f"{c['share_of_machine']:.0%} / {busy}"
    print(f"{engine:<16}" + "".join(cell(by.get(c), cpu, 16) for c in counts))

for p in load["phases"]:
    if not stands(p):
        print(f"\n{p['engine']}, {p['clients']} clients: {p.get('error') or (p.get('errors') or ['wrong answers'])[0]}")
