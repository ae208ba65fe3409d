-- A corrected, tuned setup: as queries/postgres/corrected/A.sql (ties by
-- repository name, bytewise, nulls first), reading the stored generated
-- columns, so the covering index (type, payload_action) INCLUDE (repo_name)
-- answers it with an index-only scan.
SELECT repo_name AS repo, count(*) AS count FROM tuned.{table}
WHERE type = 'IssuesEvent' AND payload_action = 'opened'
GROUP BY 1
ORDER BY count DESC, repo_name COLLATE "C" NULLS FIRST
