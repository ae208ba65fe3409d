"""What `just bench-year` prints from its records (scripts/bench-year.sh).

Per engine: the year's load (killed part way, then the rerun), exactly once
(the ledger's events against the generated ones, and each table's exact row
count against its ledger, which `ghbench query` checks before timing), the
per-hour cost, and per
query the hot median over the year's hour files beside the same events in a
few, with whether the whole answers are the same (their digests). Exit
status 1 when an engine did not store every event exactly once or gave
another answer over the year than over the few hours.

Usage: bench_year_report.py RESULTS GEN_MANIFEST ENGINES TABLE FEW_TABLE FEW_HOURS YEAR_HOURS
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def engine_results(record):
    """{engine: {query: (hot median s, answer digest, rows)}} of a query record."""
    out = {}
    for query in record["queries"]:
        for result in query["engines"]:
            stats = result.get("stats") or {}
            out.setdefault(result["engine"], {})[query["query"]] = (stats.get("median"), result.get("answer_digest"), result.get("rows"))
    return out


def main():
    folder, manifest, engines, table, few_table, few_hours, year_hours = sys.argv[1:8]
    engines = engines.split(",")
    year_hours = int(year_hours)
    generated = load(manifest)["totals"]["expected"]["events"]
    year_record, few_record = load(f"{folder}/query-{table}.json"), load(f"{folder}/query-{few_table}.json")
    year_queries, few_queries = engine_results(year_record), engine_results(few_record)
    wrong = []
    for name, record in [(table, year_record), (few_table, few_record)]:
        consistency = record["context"].get("data_consistency") or {}
        if not consistency.get("agree"):
            wrong.append(f"{name}: a table's rows or ledger differ from the others' ({consistency.get('differences')})")

    print(f"\nLoad: the same {generated:,} events as {year_hours:,} hour files (killed with SIGKILL part way, then run again) and as {few_hours}, each from a mirror over HTTP")
    print(f"{'engine':<15} {'killed at s':>11} {'rerun: kept':>11} {'loaded':>7} {'s':>8} {'ms/hour':>8} {'events':>9} {'once':>5} | {few_hours + ' hours s':>10} {'ms/hour more':>13}")
    for engine in engines:
        rerun = load(f"{folder}/load-{engine}-year.json")
        few = load(f"{folder}/load-{engine}-few.json")
        killed_at = float(open(f"{folder}/load-{engine}-killed.txt.seconds").read())
        totals = rerun["totals"]
        kept, loaded = totals["hours_skipped"], totals["hours_loaded"]
        stored = totals["engines"][engine].get("table_events")
        once = stored == generated and kept + loaded == year_hours and kept > 0 and loaded > 0
        if not once:
            wrong.append(f"{engine}: the year's table holds {stored} events of {generated} ({kept} hours kept from the killed run, {loaded} loaded by the rerun, of {year_hours})")
        per_hour = rerun["loading_seconds"] / loaded * 1000 if loaded else float("nan")
        # What an hour file costs above the same events in few files: the
        # rerun's time per hour less the few hours' time spread over the year's hours.
        more = per_hour - few["loading_seconds"] / year_hours * 1000
        print(f"{engine:<15} {killed_at:>11.2f} {kept:>11,} {loaded:>7,} {rerun['loading_seconds']:>8.2f} {per_hour:>8.2f} {stored or 0:>9,} {'yes' if once else 'NO':>5} | {few['loading_seconds']:>10.2f} {more:>13.2f}")
        upkeep = totals["engines"][engine].get("upkeep")
        if upkeep:
            print(f"{'':<15} after the rerun: {upkeep['step']} ({upkeep['seconds']:.2f} s)")

    print(f"\nQueries (corrected texts), hot median s over the {year_hours:,} hour files and over {few_hours}, and their ratio; answers compared whole")
    print(f"{'engine':<15} {'query':>5} {'year s':>9} {'few s':>9} {'ratio':>6} {'answer':>7}")
    for engine in engines:
        for query in sorted(set(year_queries.get(engine, {})) | set(few_queries.get(engine, {}))):
            year_hot, year_digest, year_rows = year_queries.get(engine, {}).get(query, (None, None, None))
            few_hot, few_digest, few_rows = few_queries.get(engine, {}).get(query, (None, None, None))
            same = year_digest is not None and year_digest == few_digest
            if not same:
                wrong.append(f"{engine} {query}: another answer over the year ({year_rows} rows) than over the few hours ({few_rows} rows)")
            ratio = f"{year_hot / few_hot:.2f}" if year_hot and few_hot else "-"
            said = lambda s: f"{s:.4f}" if s is not None else "-"
            print(f"{engine:<15} {query:>5} {said(year_hot):>9} {said(few_hot):>9} {ratio:>6} {'same' if same else 'OTHER':>7}")
    for line in wrong:
        print(f"WRONG: {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
