-- D corrected, tuned setup: as queries/postgres/corrected/D.sql
-- (IssueCommentEvent, comments > 2, only JSON numbers counted, ties by
-- repository name), reading the stored generated columns: issue_comments
-- holds the comments only where they are a JSON number (NULL otherwise), as
-- the corrected text's CASE reads them. An index-only scan of
-- (type, issue_comments) INCLUDE (repo_name).
SELECT repo_name AS repo, avg(issue_comments) AS comments
FROM tuned.{table}
WHERE type = 'IssueCommentEvent' AND issue_comments > 2
GROUP BY 1
ORDER BY comments DESC, repo_name COLLATE "C" NULLS FIRST
