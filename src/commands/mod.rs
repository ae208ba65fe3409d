pub mod doctor;
pub mod gen;
pub mod ingest;
pub mod serve;
