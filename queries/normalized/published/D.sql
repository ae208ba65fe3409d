-- D as published, over the normalized tables: repositories with a given event
-- type, ordered by the average number of issue comments, descending.
-- Known defects, kept as in the jsonb text: PushEvent payloads carry no issue,
-- so this returns no rows on real data; and there is no comments > 2.
-- Integer comments only: the jsonb text casts to int.
SELECT r.{text:repo.name}, avg(i.{number:payload.issue.comments}) AS comments
FROM {table} e
JOIN {table:payload.issue} i ON i.did = e.did
LEFT JOIN {table:repo} r ON r.did = e.did
WHERE e.{text:type} = 'PushEvent' AND i.{number:payload.issue.comments} IS NOT NULL
GROUP BY 1 ORDER BY 2 DESC
