pub mod doctor;
pub mod download;
pub mod ingest;
pub mod serve;
