-- D as published: repositories with a given event type, ordered by the average
-- number of issue comments, descending, reading the VIRTUAL generated columns.
-- Known defects, kept here on purpose: PushEvent payloads carry no issue, so
-- this returns no rows on real data; and unlike the MongoDB text it does not
-- filter comments > 2 ("more than two comments" is missing from the SQL).
-- Differences from the PostgreSQL text, on odd data only: issue_comments
-- holds JSON numbers only, where the text's ::int cast fails on a JSON string
-- or boolean; and the average is of the numbers themselves, not of them
-- rounded to integers by ::int (an AVG of integers would also be a DECIMAL of
-- only 4 decimals in MariaDB, div_precision_increment, where PostgreSQL gives
-- 16 or more). GitHub's comment counts are integers: no difference there.
SELECT repo_name, AVG(issue_comments) AS comments
FROM {table}
WHERE event_type = 'PushEvent'
  AND issue_comments IS NOT NULL
GROUP BY 1 ORDER BY 2 DESC
