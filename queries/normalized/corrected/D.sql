-- D corrected, over the normalized tables: repositories with issue comments
-- (more than two), ordered by the average number of comments, descending.
-- Joined on did: one payload.issue and one repo row per document.
-- Corrections (as in the jsonb text): IssueCommentEvent instead of PushEvent;
-- comments > 2; ties broken by repository name ascending (bytewise, nulls
-- first, like MongoDB). Only numbers count, as with MongoDB's {$gt: 2}: the
-- integer column holds every number GH Archive has there (a fractional or
-- 64-bit value would sit in another column, _d or _l, and be left out here:
-- the verification against the other engines would then show it).
SELECT r.{column:repo.name:s} AS repo, avg(i.{column:payload.issue.comments:i}) AS comments
FROM {table} e
JOIN {table:payload.issue} i ON i.did = e.did
LEFT JOIN {table:repo} r ON r.did = e.did
WHERE e.{column:type:s} = 'IssueCommentEvent' AND i.{column:payload.issue.comments:i} > 2
GROUP BY 1
ORDER BY comments DESC, r.{column:repo.name:s} COLLATE "C" NULLS FIRST
