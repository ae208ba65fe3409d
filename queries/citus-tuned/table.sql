-- The tuned Citus setup's table (queries/citus-tuned/setup.json lists each
-- change and its source): the tuned PostgreSQL setup's columns
-- (queries/postgres-tuned/table.sql), distributed by the repository's name
-- and kept in Citus's columnar access method.
-- repo_name is the distribution column: Citus refuses a generated column
-- there and routes each row by it on the coordinator, so the loader fills it
-- from each document as ->> reads repo.name, and the CHECK makes every shard
-- refuse a row whose name is not the document's (a Citus distribution column
-- holds no NULL either).
-- ghbench_hour keeps each row's hour, by which its hours are counted; it has
-- no index: a columnar table cannot delete, so no hour is ever replaced
-- (ghbench refuses --reload on it before loading anything).
-- Each statement is sent on its own (Citus refuses a string of several for
-- a distributed table); distributing is skipped when done already.
CREATE SCHEMA IF NOT EXISTS tuned;
CREATE TABLE IF NOT EXISTS tuned.{table} (
    data jsonb,
    ghbench_hour int NOT NULL,
    repo_name text NOT NULL CHECK (repo_name = data->'repo'->>'name'),
    type text GENERATED ALWAYS AS (data->>'type') STORED,
    actor_login text GENERATED ALWAYS AS (data->'actor'->>'login') STORED,
    payload_action text GENERATED ALWAYS AS (data->'payload'->>'action') STORED,
    issue_comments numeric GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(data->'payload'->'issue'->'comments') = 'number'
             THEN (data->'payload'->'issue'->'comments')::numeric END) STORED
) USING columnar;
SELECT create_distributed_table('tuned.{table}', 'repo_name')
    WHERE NOT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = 'tuned.{table}'::regclass);
