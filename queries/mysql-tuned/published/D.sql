-- D as published, tuned setup: the paper's text (PushEvent, no comments > 2,
-- its defects kept) reading the PERSISTENT generated columns, as
-- queries/mysql/published/D.sql does (JSON numbers only, averaged as they
-- are: the same answers on GH Archive, where PushEvents carry no issue and
-- this returns no rows).
SELECT repo_name, AVG(issue_comments) AS comments
FROM tuned.{table}
WHERE event_type = 'PushEvent'
  AND issue_comments IS NOT NULL
GROUP BY 1 ORDER BY 2 DESC
