-- A corrected: repositories ordered by most opened issues, reading the
-- VIRTUAL generated columns of table.sql (what ->> reads in the PostgreSQL
-- text; MariaDB 10.11 uses an index on a generated column only for a query
-- that names the column).
-- Correction: ties in count are broken by repository name ascending, so the
-- order is defined. The column's collation utf8mb4_nopad_bin compares code points,
-- in UTF-8 the same order as bytes (PostgreSQL's COLLATE "C", MongoDB's
-- string order), and ascending puts NULL first in MariaDB, as MongoDB sorts
-- null before any string (PostgreSQL's NULLS FIRST).
SELECT repo_name AS repo, COUNT(*) AS count FROM {table}
WHERE event_type = 'IssuesEvent' AND payload_action = 'opened'
GROUP BY repo_name
ORDER BY count DESC, repo_name ASC
