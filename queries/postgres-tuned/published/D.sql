-- D as published, tuned setup: the paper's text (PushEvent, no comments > 2,
-- its defects kept) reading the stored generated columns. One difference on
-- odd data only: the published text's ::int cast of the jsonb value fails on
-- a JSON string, where issue_comments is NULL for it; on GH Archive both
-- return no rows (PushEvents carry no issue).
SELECT repo_name, avg(issue_comments::int) as comments
FROM tuned.{table}
WHERE type = 'PushEvent'
  AND issue_comments::int IS NOT NULL
GROUP BY 1 ORDER BY 2 DESC
