//! Two runs side by side: per query, variant and engine, the ratio of medians
//! and whether the second is faster or slower beyond the noise.

use std::fmt::Write as _;

use super::{align_numbers, held_line, median, new_table, seconds, server_label, Style};
use crate::record::RunRecord;

/// Two runs differ when their medians differ by more than this fraction.
pub const DEFAULT_NOISE: f64 = 0.10;

/// The new run against the old, per query × variant × engine: the ratio of
/// medians and whether the new is faster or slower beyond the noise threshold.
/// Named old and new, not A and B, which read as Queries A and B.
pub fn comparison(a: &RunRecord, b: &RunRecord, noise: f64, style: Style) -> String {
    let mut out = String::new();
    for (label, ra, rb) in [("data", data_summary(a), data_summary(b)), ("servers", servers_summary(a), servers_summary(b))] {
        if ra != rb {
            let _ = writeln!(out, "note: the runs differ in {label}: old {ra}; new {rb}");
        }
    }
    let header = ["query", "variant", "engine", "old median s", "new median s", "new/old", "verdict"].map(String::from).to_vec();
    let mut table = new_table(style, header);
    for qa in &a.queries {
        let Some(qb) = b.queries.iter().find(|q| q.query == qa.query && q.variant == qa.variant) else { continue };
        for ea in &qa.engines {
            let (Some(ma), Some(mb)) = (ea.stats.map(|s| s.median), median(qb, &ea.engine)) else { continue };
            let ratio = mb / ma;
            let verdict = if ratio < 1.0 - noise {
                format!("new faster ({:.0}% less time)", (1.0 - ratio) * 100.0)
            } else if ratio > 1.0 + noise {
                format!("new slower ({:.0}% more time)", (ratio - 1.0) * 100.0)
            } else {
                format!("same within {:.0}%", noise * 100.0)
            };
            table.add_row(vec![qa.query.clone(), qa.variant.clone(), ea.engine.to_string(), seconds(ma), seconds(mb), format!("{ratio:.3}"), verdict]);
        }
    }
    align_numbers(&mut table, 3);
    let _ = writeln!(out, "old: {} ({})\nnew: {} ({})\n{table}", a.context.started_at, servers_summary(a), b.context.started_at, servers_summary(b));
    out
}

/// Which data each engine held (not how long loading it took, which runs on
/// the same data may differ in, and older files lack).
fn data_summary(r: &RunRecord) -> String {
    let engines = r.context.engines.iter().map(|e| format!("{}: {}", e.engine, held_line(e)));
    format!("table {}; {}", r.context.table, engines.collect::<Vec<_>>().join("; "))
}

fn servers_summary(r: &RunRecord) -> String {
    r.context.engines.iter().map(|e| format!("{} = {}", e.engine, server_label(e))).collect::<Vec<_>>().join(", ")
}
