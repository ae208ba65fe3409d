-- D corrected, over the normalized tables: repositories with issue comments
-- (more than two), ordered by the average number of comments, descending.
-- Joined on did: one payload.issue and one repo row per document.
-- Corrections (as in the jsonb text): IssueCommentEvent instead of PushEvent;
-- comments > 2; ties broken by repository name ascending (bytewise, nulls
-- first, like MongoDB). Only numbers count, as with MongoDB's {$gt: 2}:
-- {number:…} reads every number column the key has (_i, and _l or _d when a
-- 64-bit or fractional value made one), and never its strings.
SELECT r.{text:repo.name} AS repo, avg(i.{number:payload.issue.comments}) AS comments
FROM {table} e
JOIN {table:payload.issue} i ON i.did = e.did
LEFT JOIN {table:repo} r ON r.did = e.did
WHERE e.{text:type} = 'IssueCommentEvent' AND i.{number:payload.issue.comments} > 2
GROUP BY 1
ORDER BY comments DESC, r.{text:repo.name} COLLATE "C" NULLS FIRST
