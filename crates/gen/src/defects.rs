//! Real-world faults put into generated hours on purpose, so the loader's
//! defect policy is exercised at scale, and the exact counts a correct loader
//! must report for them. Names of quarantine reasons match `ghbench ingest`.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// How many faults to inject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DefectOptions {
    /// Chance that a line is damaged (corrupt JSON, a `\u0000` escape, or invalid UTF-8, equally likely).
    pub rate: f64,
    /// Chance that an hour's gzip file is cut short, as an interrupted download leaves it.
    pub truncate_prob: f64,
}

/// What was put into one hour.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Injected {
    /// Lines cut in the middle: not JSON any more.
    pub corrupt_lines: u64,
    /// Lines with a `\u0000` escape in the actor's login (loadable once the escape is removed).
    pub nul_escapes: u64,
    /// Lines with a byte that is not UTF-8.
    pub invalid_utf8: u64,
    /// The gzip file was cut short; lines after the cut are lost (they are still counted above).
    pub truncated_file: bool,
}

/// What a correct loader reports for the hour's file, in `ghbench ingest`'s terms.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Expected {
    /// Lines read, quarantined ones included.
    pub lines: u64,
    /// Documents every engine must store.
    pub events: u64,
    /// Events whose `\u0000` escapes are removed.
    pub sanitized: u64,
    /// Quarantine reason → lines.
    pub quarantined: BTreeMap<String, u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    Clean,
    Nul,
    Corrupt,
    BadUtf8,
}

/// One hour's file as it will be written.
pub struct DamagedHour {
    pub gzip: Vec<u8>,
    pub injected: Injected,
    pub expected: Expected,
}

/// gzip level 6, as GH Archive's own files.
pub fn gzip(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    for line in lines {
        gz.write_all(line).expect("writing to memory");
        gz.write_all(b"\n").expect("writing to memory");
    }
    gz.finish().expect("writing to memory")
}

/// Damages `events` as `options` asks and compresses them.
pub fn damage(events: Vec<String>, options: DefectOptions, rng: &mut impl Rng) -> DamagedHour {
    let mut injected = Injected::default();
    let mut kinds = Vec::with_capacity(events.len());
    let lines: Vec<Vec<u8>> = events
        .into_iter()
        .map(|event| {
            let (kind, bytes) = if options.rate > 0.0 && rng.random_bool(options.rate.min(1.0)) {
                damage_line(event.into_bytes(), rng)
            } else {
                (Line::Clean, event.into_bytes())
            };
            match kind {
                Line::Clean => {}
                Line::Nul => injected.nul_escapes += 1,
                Line::Corrupt => injected.corrupt_lines += 1,
                Line::BadUtf8 => injected.invalid_utf8 += 1,
            }
            kinds.push(kind);
            bytes
        })
        .collect();
    let mut gzip = gzip(&lines);
    let mut readable = kinds.len();
    let mut cut_line = false;
    if options.truncate_prob > 0.0 && rng.random_bool(options.truncate_prob.min(1.0)) && gzip.len() > 64 {
        injected.truncated_file = true;
        gzip.truncate((gzip.len() as f64 * rng.random_range(0.3..0.9)) as usize);
        (readable, cut_line) = recoverable_lines(&gzip);
    }
    DamagedHour { gzip, injected, expected: expected(&kinds[..readable], cut_line) }
}

fn damage_line(mut line: Vec<u8>, rng: &mut impl Rng) -> (Line, Vec<u8>) {
    // The actor's login: every event has one, and a removed `\u0000` leaves it as it was.
    let at = find(&line, br#""login":""#).map(|i| i + br#""login":""#.len());
    match (rng.random_range(0..3), at) {
        (0, Some(at)) => {
            line.splice(at..at, br"\u0000".iter().copied());
            (Line::Nul, line)
        }
        (1, Some(at)) => {
            line.insert(at, 0xFF);
            (Line::BadUtf8, line)
        }
        _ => {
            // Any strict prefix of a JSON object is invalid JSON; the text is ASCII,
            // so the cut never splits a character.
            line.truncate(rng.random_range(1..line.len().max(2)));
            (Line::Corrupt, line)
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Complete lines a reader recovers from a cut gzip file, and whether an
/// incomplete line follows them.
fn recoverable_lines(gzip: &[u8]) -> (usize, bool) {
    let mut text = Vec::new();
    // The error is the point: read what comes before it.
    let _ = MultiGzDecoder::new(gzip).read_to_end(&mut text);
    let complete = text.iter().filter(|b| **b == b'\n').count();
    (complete, !text.is_empty() && !text.ends_with(b"\n"))
}

fn expected(kinds: &[Line], cut_line: bool) -> Expected {
    let mut e = Expected { lines: kinds.len() as u64 + u64::from(cut_line), ..Expected::default() };
    let mut quarantine = |reason: &str| *e.quarantined.entry(reason.to_string()).or_default() += 1;
    for kind in kinds {
        match kind {
            Line::Clean | Line::Nul => {}
            Line::Corrupt => quarantine("invalid_json"),
            Line::BadUtf8 => quarantine("invalid_utf8"),
        }
    }
    if cut_line {
        quarantine("truncated_line");
    }
    e.sanitized = kinds.iter().filter(|k| **k == Line::Nul).count() as u64;
    e.events = kinds.iter().filter(|k| matches!(k, Line::Clean | Line::Nul)).count() as u64;
    e
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn events(n: usize) -> Vec<String> {
        (0..n).map(|i| format!(r#"{{"id":"{i}","actor":{{"login":"user{i}"}},"pad":"{}"}}"#, "x".repeat(i % 50))).collect()
    }

    #[test]
    fn counts_what_it_injects() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let hour = damage(events(3000), DefectOptions { rate: 0.1, truncate_prob: 0.0 }, &mut rng);
        let i = &hour.injected;
        assert!(i.corrupt_lines > 50 && i.nul_escapes > 50 && i.invalid_utf8 > 50, "{i:?}");
        let e = &hour.expected;
        assert_eq!(e.lines, 3000);
        assert_eq!(e.events, 3000 - i.corrupt_lines - i.invalid_utf8);
        assert_eq!(e.sanitized, i.nul_escapes);
        assert_eq!(e.quarantined["invalid_json"], i.corrupt_lines);
        // Check the bytes themselves, independently of the bookkeeping.
        let mut text = Vec::new();
        MultiGzDecoder::new(&hour.gzip[..]).read_to_end(&mut text).unwrap();
        let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
        let bad_utf8 = lines.iter().filter(|l| std::str::from_utf8(l).is_err()).count() as u64;
        let not_json = lines
            .iter()
            .filter_map(|l| std::str::from_utf8(l).ok())
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
            .count() as u64;
        assert_eq!((bad_utf8, not_json), (i.invalid_utf8, i.corrupt_lines));
    }

    #[test]
    fn a_cut_file_loses_the_lines_after_the_cut() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let hour = damage(events(3000), DefectOptions { rate: 0.0, truncate_prob: 1.0 }, &mut rng);
        assert!(hour.injected.truncated_file);
        let e = &hour.expected;
        assert!(e.lines > 100 && e.lines < 3000, "{e:?}");
        let cut = e.quarantined.get("truncated_line").copied().unwrap_or(0);
        assert_eq!(e.events + cut, e.lines);
    }
}
