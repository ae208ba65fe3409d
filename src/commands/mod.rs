pub mod doctor;
pub mod download;
pub mod index;
pub mod ingest;
pub mod olap;
pub mod query;
pub mod report;
pub mod serve;
