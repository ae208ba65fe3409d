pub mod doctor;
pub mod ingest;
pub mod serve;
