-- A as published, tuned setup: the paper's text reading the stored generated
-- columns instead of the jsonb paths (the same values). Orders by count only,
-- as published: repositories with equal counts come back in any order.
SELECT repo_name, count(*) FROM tuned.{table}
WHERE type = 'IssuesEvent' AND payload_action = 'opened'
GROUP BY 1 ORDER BY count DESC
