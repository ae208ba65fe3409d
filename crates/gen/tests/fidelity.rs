//! A generated hour against the real one (../shared/data/gharchive/2015-01-01-0),
//! scanned directly with serde_json: type mix, event sizes, and the shape of the
//! answers to Queries A-D (corrected variants). Tolerances are stated per check.

use std::collections::HashMap;

use ghbench_gen::growth::Pools;
use ghbench_gen::{generate_hour_gzip, Profile};
use ghbench_testkit::{lines_of, real_hour};
use serde_json::Value;

/// Everything the checks compare, for one hour.
struct HourStats {
    events: usize,
    types: HashMap<String, usize>,
    mean_size: f64,
    median_size: f64,
    /// Query answers as (key, value) rows, in the query's order.
    a: Vec<(String, f64)>,
    b: Vec<(String, f64)>,
    c: Vec<(String, f64)>,
    d: Vec<(String, f64)>,
    org: usize,
}

fn sorted_desc(map: HashMap<String, f64>) -> Vec<(String, f64)> {
    let mut rows: Vec<(String, f64)> = map.into_iter().collect();
    rows.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    rows
}

fn stats(lines: &[String]) -> HourStats {
    let (mut a, mut b, mut c) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut d: HashMap<String, (f64, f64)> = HashMap::new();
    let mut sizes: Vec<usize> = lines.iter().map(String::len).collect();
    let mut org = 0;
    for line in lines {
        let e: Value = serde_json::from_str(line).unwrap();
        let kind = e["type"].as_str().unwrap().to_string();
        let repo = e["repo"]["name"].as_str().unwrap().to_string();
        *b.entry(kind.clone()).or_insert(0.0) += 1.0;
        *c.entry(e["actor"]["login"].as_str().unwrap().to_string()).or_insert(0.0) += 1.0;
        org += usize::from(e.get("org").is_some());
        // A: repositories by IssuesEvent with payload.action = 'opened'.
        if kind == "IssuesEvent" && e["payload"]["action"] == "opened" {
            *a.entry(repo.clone()).or_insert(0.0) += 1.0;
        }
        // D (corrected): IssueCommentEvent with payload.issue.comments > 2, avg per repository.
        if let (true, Some(comments)) = (kind == "IssueCommentEvent", e["payload"]["issue"]["comments"].as_i64()) {
            if comments > 2 {
                let slot = d.entry(repo).or_insert((0.0, 0.0));
                slot.0 += comments as f64;
                slot.1 += 1.0;
            }
        }
    }
    sizes.sort_unstable();
    let n = sizes.len();
    let types = b.iter().map(|(k, v)| (k.clone(), *v as usize)).collect();
    let mut c = sorted_desc(c);
    c.truncate(10);
    HourStats {
        events: n,
        types,
        mean_size: sizes.iter().sum::<usize>() as f64 / n as f64,
        median_size: if n % 2 == 1 { sizes[n / 2] as f64 } else { (sizes[n / 2 - 1] + sizes[n / 2]) as f64 / 2.0 },
        a: sorted_desc(a),
        b: sorted_desc(b),
        c,
        d: sorted_desc(d.into_iter().map(|(k, (sum, n))| (k, sum / n)).collect()),
        org,
    }
}

fn within(real: f64, generated: f64, tolerance: f64) -> bool {
    (generated - real).abs() <= tolerance * real
}

#[test]
fn a_generated_hour_matches_the_real_one_within_tolerances() {
    check_first_hour(Pools::Fixed, 0.20);
}

/// Growing pools bring new repositories of others as the law says, by the
/// types the real hour's came with; comments then spread over more of them
/// than the real hour's did (D's groups about a fifth more, measured): the
/// model keeps no memory of which issue a comment follows.
#[test]
fn a_generated_hour_with_growing_pools_matches_the_real_one_within_tolerances() {
    check_first_hour(Pools::Growing, 0.30);
}

/// The first generated hour against the real one, query groups within `rows_tolerance`.
fn check_first_hour(pools: Pools, rows_tolerance: f64) {
    let Some(real_path) = real_hour() else { return };
    let real = stats(&lines_of(&std::fs::read(real_path).unwrap()));
    let profile = pools.apply(Profile::default_profile(), "built-in").unwrap();
    let events = real.events as u64;
    let generated = stats(&lines_of(&generate_hour_gzip(profile, 42, "2015-01-01T00".parse().unwrap(), events).unwrap()));
    assert_eq!(generated.events, real.events);
    let mut failures = Vec::new();

    // Type mix: every type's share within ±2 percentage points.
    eprintln!("{:<32} {:>8} {:>8}", "type share %", "real", "gen");
    let mut names: Vec<&String> = real.types.keys().chain(generated.types.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let share = |s: &HourStats| 100.0 * *s.types.get(name).unwrap_or(&0) as f64 / s.events as f64;
        let (r, g) = (share(&real), share(&generated));
        eprintln!("{name:<32} {r:>8.2} {g:>8.2}");
        if (r - g).abs() > 2.0 {
            failures.push(format!("{name} share {g:.2}% vs real {r:.2}% (±2 points)"));
        }
    }

    // Event size: mean and median within ±10%.
    eprintln!("mean size   real {:.0}  gen {:.0}", real.mean_size, generated.mean_size);
    eprintln!("median size real {:.0}  gen {:.0}", real.median_size, generated.median_size);
    if !within(real.mean_size, generated.mean_size, 0.10) {
        failures.push(format!("mean size {:.0} vs real {:.0} (±10%)", generated.mean_size, real.mean_size));
    }
    if !within(real.median_size, generated.median_size, 0.10) {
        failures.push(format!("median size {:.0} vs real {:.0} (±10%)", generated.median_size, real.median_size));
    }

    // Queries: row counts within ±20%, the top value within a factor of 5 (same order of magnitude).
    for (query, r, g) in [("A", &real.a, &generated.a), ("B", &real.b, &generated.b), ("C", &real.c, &generated.c), ("D", &real.d, &generated.d)] {
        let top = |rows: &[(String, f64)]| rows.first().map_or(0.0, |x| x.1);
        let head = |rows: &[(String, f64)]| rows.iter().take(3).map(|x| format!("{:.1}", x.1)).collect::<Vec<_>>().join(" ");
        eprintln!("query {query}: rows real {} gen {}; top values real [{}] gen [{}]", r.len(), g.len(), head(r), head(g));
        if !within(r.len() as f64, g.len() as f64, rows_tolerance) {
            failures.push(format!("query {query}: {} rows vs real {} (±{:.0}%)", g.len(), r.len(), rows_tolerance * 100.0));
        }
        let ratio = top(g) / top(r);
        if !(0.2..=5.0).contains(&ratio) {
            failures.push(format!("query {query}: top value {} vs real {} (within 5x)", top(g), top(r)));
        }
    }

    // About a third of events carry an org.
    let (ro, go) = (real.org as f64 / real.events as f64, generated.org as f64 / generated.events as f64);
    eprintln!("org share   real {ro:.3}  gen {go:.3}");
    if (ro - go).abs() > 0.05 {
        failures.push(format!("org share {go:.3} vs real {ro:.3} (±0.05)"));
    }
    assert!(failures.is_empty(), "generated hour differs from the real one:\n  {}", failures.join("\n  "));
}
