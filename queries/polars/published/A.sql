-- A as published: repositories ordered by most opened issues (polars SQL over
-- the table's Parquet files; "repo.name" and "payload.action" are columns named
-- by their JSON paths, see ../columns.json).
-- Orders by count only: repositories with equal counts come back in any order.
SELECT "repo.name" AS name, count(*) AS count FROM {table}
WHERE type = 'IssuesEvent' AND "payload.action" = 'opened'
GROUP BY "repo.name" ORDER BY count DESC
