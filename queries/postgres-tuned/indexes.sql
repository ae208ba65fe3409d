-- The tuned setup's indexes (queries/postgres-tuned/setup.json says why and
-- where it is documented): one covering B-tree index per query on the stored
-- generated columns, so each query is an index-only scan (after VACUUM, which
-- ingest runs). Equality columns first, then the range column; the column a
-- query groups by is INCLUDEd where it is not a key.
-- They live beside tuned.{table}, in schema tuned: the paper's table never sees them.
CREATE INDEX IF NOT EXISTS {table}_type_action ON tuned.{table} (type, payload_action) INCLUDE (repo_name);
CREATE INDEX IF NOT EXISTS {table}_type ON tuned.{table} (type);
CREATE INDEX IF NOT EXISTS {table}_actor_login ON tuned.{table} (actor_login);
CREATE INDEX IF NOT EXISTS {table}_type_comments ON tuned.{table} (type, issue_comments) INCLUDE (repo_name);
