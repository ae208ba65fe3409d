-- A as published, tuned setup: the paper's text reading the PERSISTENT
-- generated columns of tuned.<table> (the same values as the paper setup's
-- VIRTUAL ones), answered from the index (event_type, payload_action, repo_name).
-- Orders by count only, as published: repositories with equal counts come back in any order.
SELECT repo_name, COUNT(*) AS count FROM tuned.{table}
WHERE event_type = 'IssuesEvent' AND payload_action = 'opened'
GROUP BY 1 ORDER BY count DESC
