"""Growing pools beside fixed ones, from the newest bench record of each folder:
per query, variant and engine the hot and cold slopes and the answer's rows at
the largest size with their slope; per engine the bytes per event. A slope is
shown only where its fit holds (the reports say why not elsewhere)."""
import json
import pathlib
import sys


def newest(folder):
    records = sorted(pathlib.Path(folder).glob("bench-*.json"))
    if not records:
        sys.exit(f"no bench record in {folder}")
    return json.loads(records[-1].read_text())


def slope(fit, floor):
    if not fit or len(fit["points"]) < 3 or fit.get("exponent") is None:
        return "-"
    points = fit["points"]
    if points[-1][0] < 4 * points[0][0] or (floor and max(p[1] for p in points) < floor) or fit["exponent"] < 0:
        return "-"
    return f"{fit['exponent']:.2f}"


def main(growing_dir, fixed_dir):
    growing, fixed = newest(growing_dir), newest(fixed_dir)
    key = lambda g: (g["query"], g["variant"], g["engine"])
    theirs = {key(g): g for g in fixed["growth"]}
    print(f"{'query':<14} {'engine':<15} {'hot g/f':>11} {'cold g/f':>11} {'rows at largest g/f':>21} {'rows slope g/f':>15}")
    for g in growing["growth"]:
        f = theirs.get(key(g))
        if not f:
            continue
        hot = lambda r: slope({"points": r["points"], "exponent": r.get("exponent")}, 0.01)
        rows = lambda r: int(r["rows"]["points"][-1][1]) if r.get("rows") else "-"
        print(
            f"{g['query'] + ' ' + g['variant']:<14} {g['engine']:<15} {hot(g) + ' / ' + hot(f):>11} "
            f"{slope(g.get('cold'), 0.01) + ' / ' + slope(f.get('cold'), 0.01):>11} "
            f"{str(rows(g)) + ' / ' + str(rows(f)):>21} {slope(g.get('rows'), None) + ' / ' + slope(f.get('rows'), None):>15}"
        )
    print()
    per_event = {e["engine"]: e["bytes_per_event"] for e in fixed.get("engine_growth", [])}
    for e in growing.get("engine_growth", []):
        f = per_event.get(e["engine"], [])
        said = lambda points: " -> ".join(f"{b:.0f}" for _, b in points) or "-"
        print(f"{e['engine']:<15} bytes per event, growing: {said(e['bytes_per_event'])}; fixed: {said(f)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
