//! The terminal view: the results table, and under it which server build,
//! data and settings produced the numbers, with each engine's caveat.

use super::{caveats, data_line, server_label};
use ghbench_record::run::Context;

/// Under every table of numbers: which server build, data and settings produced them.
pub fn server_lines(context: &Context) -> Vec<String> {
    let mut lines = Vec::new();
    for engine in &context.engines {
        lines.push(format!("{:<15} {}; table {}: {}", engine.engine, server_label(engine), context.table, data_line(engine)));
        let settings: Vec<String> = engine.server.iter().flat_map(|s| &s.settings).map(|(k, v)| format!("{k}={v}")).collect();
        if !settings.is_empty() {
            lines.push(format!("{:<15} settings: {}", "", settings.join(" ")));
        }
        if let Some(said) = super::memory_limit_line(engine) {
            lines.push(format!("{:<15} memory: {said}", ""));
        }
        if let Some(limit) = &engine.disk_limit {
            lines.push(format!("{:<15} disk: {}", "", limit.said()));
        }
        for (_, caveat) in caveats(context).into_iter().filter(|(e, _)| **e == engine.engine) {
            lines.push(format!("{:<15} note: {caveat}", ""));
        }
    }
    lines
}
