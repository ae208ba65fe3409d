-- The citus setup's table (queries/citus/setup.json lists each change and its
-- source): the paper's (data jsonb), distributed over the coordinator's
-- workers by the hash of the whole document, as the paper's table has no
-- other column to distribute by. ghbench_hour keeps each row's hour
-- (yyyymmddhh): on a distributed table the transaction id that finds an
-- hour's rows on one PostgreSQL is each worker's own, so an hour is counted
-- and replaced by this column and its index.
-- Each statement is sent on its own (Citus refuses a string of several for a
-- distributed table); the index is made before the table is distributed, so
-- every shard is made with it; distributing is skipped when done already
-- (create_distributed_table refuses a table that is distributed).
CREATE TABLE IF NOT EXISTS {table} (data jsonb, ghbench_hour int NOT NULL);
CREATE INDEX IF NOT EXISTS {table}_ghbench_hour ON {table} (ghbench_hour);
SELECT create_distributed_table('{table}', 'data')
    WHERE NOT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = '{table}'::regclass);
