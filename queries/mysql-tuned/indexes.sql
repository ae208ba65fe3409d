-- The tuned setup's indexes (queries/mysql-tuned/setup.json says why and
-- where it is documented): one composite index per query on the PERSISTENT
-- generated columns, holding every column its query reads, so InnoDB answers
-- each query from the index alone (EXPLAIN: "Using index"). Equality columns
-- first, then the range column, then the grouped column (InnoDB has no
-- INCLUDE: a column an index carries is a key part).
-- They live on tuned.<table>, in database tuned: the paper's table never sees them.
CREATE INDEX IF NOT EXISTS {table}_type_action ON tuned.{table} (event_type, payload_action, repo_name);
CREATE INDEX IF NOT EXISTS {table}_type ON tuned.{table} (event_type);
CREATE INDEX IF NOT EXISTS {table}_actor_login ON tuned.{table} (actor_login);
CREATE INDEX IF NOT EXISTS {table}_type_comments ON tuned.{table} (event_type, issue_comments, repo_name);
