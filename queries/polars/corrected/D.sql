-- D corrected: repositories with issue comments (more than two), ordered by
-- the average number of comments, descending.
-- Corrections (as in every dialect):
--   * IssueCommentEvent instead of PushEvent: PushEvents carry no
--     payload.issue, so the published D returns no rows on real data.
--   * comments > 2, as the MongoDB text has and the published SQL lacked.
--   * Only JSON numbers count, as with MongoDB's {$gt: 2}: the engine's
--     "payload.issue.comments" column holds numbers only, null for anything else
--     (see ../columns.json).
--   * Ties in the average are broken by repository name ascending (bytewise,
--     nulls first, like MongoDB).
SELECT "repo.name" AS repo, avg("payload.issue.comments") AS comments
FROM {table}
WHERE type = 'IssueCommentEvent' AND "payload.issue.comments" > 2
GROUP BY "repo.name"
ORDER BY comments DESC, repo ASC NULLS FIRST
