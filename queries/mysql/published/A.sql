-- A as published: repositories ordered by most opened issues.
-- The paper's text reading the VIRTUAL generated columns of table.sql, which
-- hold what data->'repo'->>'name', data->>'type' and data->'payload'->>'action'
-- read (MariaDB 10.11 uses an index on a generated column only for a query
-- that names the column).
-- Orders by count only: repositories with equal counts come back in any order.
SELECT repo_name, COUNT(*) AS count FROM {table}
WHERE event_type = 'IssuesEvent' AND payload_action = 'opened'
GROUP BY 1 ORDER BY count DESC
