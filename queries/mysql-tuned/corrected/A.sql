-- A corrected, tuned setup: as queries/mysql/corrected/A.sql (ties by
-- repository name, bytewise with utf8mb4_nopad_bin, NULL first), reading the
-- PERSISTENT generated columns of tuned.<table>: the composite index
-- (event_type, payload_action, repo_name) answers it alone, a ref lookup on
-- the two equalities that reads repo_name from the index (EXPLAIN: "Using index").
SELECT repo_name AS repo, COUNT(*) AS count FROM tuned.{table}
WHERE event_type = 'IssuesEvent' AND payload_action = 'opened'
GROUP BY repo_name
ORDER BY count DESC, repo_name ASC
