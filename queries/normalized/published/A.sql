-- A as published, over the normalized tables: repositories ordered by most
-- opened issues. Plain SQL, joined on did (one payload and one repo row per
-- document); a document without a repo still counts, under a null name, as
-- data->'repo'->>'name' gives it in jsonb.
-- Orders by count only: repositories with equal counts come back in any order.
SELECT r.{text:repo.name}, count(*)
FROM {table} e
JOIN {table:payload} p ON p.did = e.did
LEFT JOIN {table:repo} r ON r.did = e.did
WHERE e.{text:type} = 'IssuesEvent' AND p.{text:payload.action} = 'opened'
GROUP BY 1 ORDER BY count DESC
