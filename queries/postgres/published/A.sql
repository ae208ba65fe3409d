-- A as published: repositories ordered by most opened issues.
-- Orders by count only: repositories with equal counts come back in any order.
SELECT data->'repo'->>'name', count(*) FROM {table}
WHERE (data->>'type') = 'IssuesEvent' AND (data->'payload'->>'action') = 'opened'
GROUP BY 1 ORDER BY count DESC
