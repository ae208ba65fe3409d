-- D corrected: repositories with issue comments (more than two), ordered by
-- the average number of comments, descending, reading the VIRTUAL generated
-- columns of table.sql.
-- Corrections (as in the PostgreSQL text):
--   * IssueCommentEvent instead of PushEvent: PushEvents carry no
--     payload.issue, so the published D returns no rows on real data.
--   * comments > 2, as the MongoDB text has and the published SQL lacked.
--   * Only JSON numbers count, as with MongoDB's $gt of 2: issue_comments is
--     NULL for JSON strings, booleans and nulls (the PostgreSQL text's CASE).
--     It is a DOUBLE, so the average is a DOUBLE (PostgreSQL's is numeric:
--     equal to 1e-9 relative).
--   * Ties in the average are broken by repository name ascending (bytewise,
--     utf8mb4_nopad_bin, and NULL first, both like MongoDB).
SELECT repo_name AS repo, AVG(issue_comments) AS comments
FROM {table}
WHERE event_type = 'IssueCommentEvent' AND issue_comments > 2
GROUP BY repo_name
ORDER BY comments DESC, repo_name ASC
