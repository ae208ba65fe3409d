-- D as published: repositories with a given event type, ordered by the average
-- number of issue comments, descending.
-- Known defects, kept here on purpose: PushEvent payloads carry no issue, so
-- this returns no rows on real data; and it does not filter comments > 2.
-- "payload.issue.comments" holds JSON numbers only (see ../columns.json).
SELECT "repo.name" AS name, avg("payload.issue.comments") AS comments
FROM {table}
WHERE type = 'PushEvent' AND "payload.issue.comments" IS NOT NULL
GROUP BY "repo.name" ORDER BY comments DESC
