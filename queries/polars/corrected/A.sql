-- A corrected: repositories ordered by most opened issues.
-- Correction: ties in count are broken by repository name ascending, so the
-- order is defined. polars compares strings by their UTF-8 bytes, as MongoDB
-- and PostgreSQL's COLLATE "C" do; NULLS FIRST as MongoDB sorts null.
SELECT "repo.name" AS repo, count(*) AS count FROM {table}
WHERE type = 'IssuesEvent' AND "payload.action" = 'opened'
GROUP BY "repo.name"
ORDER BY count DESC, repo ASC NULLS FIRST
