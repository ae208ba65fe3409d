//! Each engine's events per second beside the paper's (issue 51): the rows
//! a run's record gives, the paper's engine each answers like for like, the
//! ratio from the record's own numbers, and where a query comes within 1.5×.

use ghbench_report::paper::{per_event_table, within_lines, WITHIN};
use ghbench_testkit::sample::record;

#[test]
fn every_engine_s_events_per_second_stand_beside_the_paper_s_engine() {
    let run = record();
    let table = per_event_table(&run).expect("the sample carries the paper's numbers");
    let paper = run.published.as_ref().unwrap();
    // Corrected D does other work than published D: left out.
    assert!(table.rows.iter().all(|r| !r[0].starts_with('D')), "{:?}", table.rows);
    assert_eq!(table.rows.len(), 3 * run.context.engines.len(), "A–C on every engine");
    for row in &table.rows {
        let (query, engine) = (&row[0][..1], row[1].as_str());
        let theirs = if engine == "mongo" { "mongo" } else { "postgres" };
        let paper_rate = paper.events as f64 / paper.seconds[query][&theirs.into()];
        assert!(row[2].starts_with(&format!("{paper_rate:.0} ")) && row[2].contains(&paper.engines[&theirs.into()]), "{row:?}");
        let q = run.queries.iter().find(|q| q.query == query).unwrap();
        let result = q.engines.iter().find(|r| r.engine.name() == engine).unwrap();
        let events = run.context.engines.iter().find(|e| e.engine.name() == engine).unwrap().data.as_ref().unwrap().events as f64;
        match result.hot_stats() {
            Some(stats) => assert_eq!(row[4], format!("{:.2}×", events / stats.median / paper_rate), "{row:?}"),
            None => assert_eq!(row[4], "–"),
        }
    }
}

#[test]
fn a_query_is_said_within_the_goal_only_where_its_ratio_is() {
    let mut near = record();
    let paper = near.published.clone().unwrap();
    let events = near.context.engines[0].data.as_ref().unwrap().events as f64;
    // postgres's A made 1.2× slower than the paper per event, hot; B left as it is.
    let paper_a = paper.events as f64 / paper.seconds["A"][&"postgres".into()];
    let a = near.queries.iter_mut().find(|q| q.query == "A").unwrap();
    let result = a.engines.iter_mut().find(|r| r.engine.name() == "postgres").unwrap();
    let seconds = events / (paper_a / 1.2);
    result.stats = result.stats.map(|s| ghbench_record::run::Stats { median: seconds, ..s });
    let lines = within_lines(&[("here".to_string(), &near)], &"postgres".into());
    let said = |q: &str| lines.iter().find(|l| l.starts_with(q)).unwrap_or_else(|| panic!("no {q} in {lines:?}")).clone();
    assert!(said("A").contains(&format!("within {WITHIN}×")) && said("A").contains("hot, here (0.83× the paper's events/s: slower)"), "{lines:?}");
    assert!(said("B").contains("NOT within"), "{lines:?}");
}
