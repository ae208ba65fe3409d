-- A corrected, over the normalized tables: repositories ordered by most opened
-- issues. Joined on did (one payload and one repo row per document); a
-- document without a repo counts under a null name, as in jsonb.
-- Correction: ties in count are broken by repository name ascending, bytewise
-- (COLLATE "C", like MongoDB), nulls first (like MongoDB).
SELECT r.{text:repo.name} AS repo, count(*) AS count
FROM {table} e
JOIN {table:payload} p ON p.did = e.did
LEFT JOIN {table:repo} r ON r.did = e.did
WHERE e.{text:type} = 'IssuesEvent' AND p.{text:payload.action} = 'opened'
GROUP BY 1
ORDER BY count DESC, r.{text:repo.name} COLLATE "C" NULLS FIRST
