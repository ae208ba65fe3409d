-- The paper's five indexes (reference: "The five indexes"), in its order, on
-- the VIRTUAL generated columns of queries/mysql/table.sql, which hold the
-- paths the paper's PostgreSQL expression indexes index. One statement per
-- index; the table placeholder is replaced by the validated table name.
-- Changed from the paper: each index is named <table>_<what> and created
-- IF NOT EXISTS, so `ghbench index` can be run again without adding a
-- duplicate index. InnoDB stores a virtual column's value in its secondary
-- index, so an index can answer a query that reads only its column.
CREATE INDEX IF NOT EXISTS {table}_repo_name ON {table} (repo_name);
CREATE INDEX IF NOT EXISTS {table}_payload_action ON {table} (payload_action);
CREATE INDEX IF NOT EXISTS {table}_type ON {table} (event_type);
CREATE INDEX IF NOT EXISTS {table}_actor_login ON {table} (actor_login);
CREATE INDEX IF NOT EXISTS {table}_issue_comments ON {table} (issue_comments);
