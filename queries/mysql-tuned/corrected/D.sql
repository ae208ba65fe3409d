-- D corrected, tuned setup: as queries/mysql/corrected/D.sql
-- (IssueCommentEvent, comments > 2, only JSON numbers counted, ties by
-- repository name), reading the PERSISTENT generated columns: issue_comments
-- holds the comments only where they are a JSON number (NULL otherwise), a
-- DOUBLE, so the average is a DOUBLE. A range scan of the composite index
-- (event_type, issue_comments, repo_name) alone: the equality, then the
-- range, then the grouped column (EXPLAIN: "Using index").
SELECT repo_name AS repo, AVG(issue_comments) AS comments
FROM tuned.{table}
WHERE event_type = 'IssueCommentEvent' AND issue_comments > 2
GROUP BY repo_name
ORDER BY comments DESC, repo_name ASC
