//! Result rows in one normal form for every engine, so results can be compared:
//! keys as text, counts as integers, averages as f64.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Relative tolerance for comparing averages (engines sum in different orders
/// and types: PostgreSQL exact numeric, MongoDB double).
pub const FLOAT_TOLERANCE: f64 = 1e-9;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

pub type Row = Vec<Cell>;

impl Cell {
    /// A value PostgreSQL sent as text (simple query protocol): integers stay
    /// exact, other numbers (`avg` is `numeric`) become f64, the rest is text.
    /// Used for the value columns only; keys are always text.
    pub fn from_sql_value(text: Option<&str>) -> Cell {
        match text {
            None => Cell::Null,
            Some(t) => t
                .parse::<i64>()
                .map(Cell::Int)
                .or_else(|_| t.parse::<f64>().map(Cell::Float))
                .unwrap_or_else(|_| Cell::Text(t.to_string())),
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Equal as results: integers exactly, anything with a float to 1e-9 relative.
    pub fn agrees(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Int(a), Cell::Int(b)) => a == b,
            (Cell::Float(_), _) | (_, Cell::Float(_)) => match (self.as_f64(), other.as_f64()) {
                (Some(a), Some(b)) => close(a, b),
                _ => false,
            },
            _ => self == other,
        }
    }

    /// A total order for sorting rows into a canonical order (nulls, numbers, text).
    pub fn canonical_cmp(&self, other: &Cell) -> Ordering {
        fn rank(c: &Cell) -> u8 {
            match c {
                Cell::Null => 0,
                Cell::Int(_) | Cell::Float(_) => 1,
                Cell::Text(_) => 2,
            }
        }
        match (self, other) {
            (Cell::Text(a), Cell::Text(b)) => a.cmp(b),
            _ => match (self.as_f64(), other.as_f64()) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                _ => rank(self).cmp(&rank(other)),
            },
        }
    }
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= FLOAT_TOLERANCE * a.abs().max(b.abs())
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Null => f.write_str("null"),
            Cell::Int(i) => write!(f, "{i}"),
            Cell::Float(x) => write!(f, "{x}"),
            Cell::Text(s) => write!(f, "{s:?}"),
        }
    }
}

pub fn rows_agree(a: &[Cell], b: &[Cell]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.agrees(y))
}

/// A digest (`blake3:…`) of a whole result, its rows in the order given:
/// integers and text exactly, a float to 9 significant digits (as
/// [`Cell::agrees`], about: sums in another order differ in the last bits).
/// Equal for equal answers of one engine, so a result can be checked
/// against another run's without keeping all its rows; across engines only
/// where they type a value alike (an average is a float on one, an integer
/// on another when it is whole).
pub fn answer_digest(rows: &[Row]) -> String {
    let mut hasher = blake3::Hasher::new();
    for row in rows {
        for cell in row {
            let said = match cell {
                Cell::Null => "n".to_string(),
                Cell::Int(i) => format!("i{i}"),
                Cell::Float(f) => format!("f{f:.8e}"),
                // Debug quotes and escapes: no text can pass for a separator.
                Cell::Text(t) => format!("t{t:?}"),
            };
            hasher.update(said.as_bytes());
            hasher.update(b"\t");
        }
        hasher.update(b"\n");
    }
    format!("blake3:{}", hasher.finalize().to_hex())
}

pub fn show_row(row: &[Cell]) -> String {
    format!("({})", row.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_text_values_normalise_like_mongo_values() {
        assert_eq!(Cell::from_sql_value(Some("42")), Cell::Int(42));
        assert!(Cell::from_sql_value(Some("3.3333333333333333")).agrees(&Cell::Float(10.0 / 3.0)));
        assert!(Cell::from_sql_value(Some("130.0000000000000000")).agrees(&Cell::Float(130.0)));
        assert_eq!(Cell::from_sql_value(None), Cell::Null);
        assert!(!Cell::Int(3).agrees(&Cell::Int(4)));
        assert!(!Cell::Float(1.0).agrees(&Cell::Float(1.000001)));
        assert!(!Cell::Text("3".into()).agrees(&Cell::Int(3)));
    }

    #[test]
    fn the_answer_digest_tells_answers_apart_but_not_float_noise() {
        let answer = |value: Cell| vec![vec![Cell::Text("a/b".into()), Cell::Int(3)], vec![Cell::Text("c".into()), value]];
        let digest = answer_digest(&answer(Cell::Float(10.0 / 3.0)));
        assert_eq!(digest, answer_digest(&answer(Cell::Float(10.0 / 3.0 + 1e-15))), "summed in another order");
        assert_ne!(digest, answer_digest(&answer(Cell::Float(3.334))));
        assert_ne!(digest, answer_digest(&answer(Cell::Null)));
        // Rows in another order, or a cell moved across rows, are another answer.
        let rows = answer(Cell::Int(2));
        let swapped: Vec<Row> = rows.iter().rev().cloned().collect();
        assert_ne!(answer_digest(&rows), answer_digest(&swapped));
        assert_ne!(answer_digest(&[vec![Cell::Text("a".into()), Cell::Text("b".into())]]), answer_digest(&[vec![Cell::Text("a\tt\"b".into())]]));
        assert!(digest.starts_with("blake3:"));
    }
}
