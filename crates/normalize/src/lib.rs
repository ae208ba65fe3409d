//! The normalized layout: ToroDB-style relational tables derived from the
//! JSON documents (see [`mapping`] for the rules, with an example document and
//! its rows), so Queries A–D can run as plain SQL and be compared with the
//! same queries over `jsonb`. The engine (loading, queries, `ghbench
//! normalize`) builds on this mapping.

pub mod mapping;
pub mod names;
pub mod rebuild;

pub use mapping::{Cell, ColumnDef, ColumnKey, Derived, Kind, Row, Schema, TableDef, ROOT};
pub use rebuild::rebuild;
