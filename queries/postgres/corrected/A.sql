-- A corrected: repositories ordered by most opened issues.
-- Correction: ties in count are broken by repository name ascending, so the
-- order is defined. COLLATE "C" compares bytes, as MongoDB compares strings,
-- whatever the cluster's locale; NULLS FIRST because MongoDB sorts null before
-- any string.
SELECT data->'repo'->>'name' AS repo, count(*) AS count FROM {table}
WHERE (data->>'type') = 'IssuesEvent' AND (data->'payload'->>'action') = 'opened'
GROUP BY 1
ORDER BY count DESC, (data->'repo'->>'name') COLLATE "C" NULLS FIRST
