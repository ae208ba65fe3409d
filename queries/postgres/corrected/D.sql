-- D corrected: repositories with issue comments (more than two), ordered by
-- the average number of comments, descending.
-- Corrections:
--   * IssueCommentEvent instead of PushEvent: PushEvents carry no
--     payload.issue, so the published D returns no rows on real data.
--   * comments > 2, as the MongoDB text has and the published SQL lacked.
--   * Only JSON numbers count, as with MongoDB's {$gt: 2}; the CASE keeps the
--     cast away from JSON nulls and strings (a bare ::int would fail on them,
--     and AND does not promise an evaluation order).
--   * Ties in the average are broken by repository name ascending (bytewise
--     COLLATE "C" and nulls first, both like MongoDB).
SELECT data->'repo'->>'name' AS repo,
       avg(CASE WHEN jsonb_typeof(data->'payload'->'issue'->'comments') = 'number'
                THEN (data->'payload'->'issue'->'comments')::numeric END) AS comments
FROM {table}
WHERE data->>'type' = 'IssueCommentEvent'
  AND CASE WHEN jsonb_typeof(data->'payload'->'issue'->'comments') = 'number'
           THEN (data->'payload'->'issue'->'comments')::numeric END > 2
GROUP BY 1
ORDER BY comments DESC, (data->'repo'->>'name') COLLATE "C" NULLS FIRST
