-- D as published: repositories with a given event type, ordered by the average
-- number of issue comments, descending.
-- Known defects, kept here on purpose: PushEvent payloads carry no issue, so
-- this returns no rows on real data; and unlike the MongoDB text it does not
-- filter comments > 2 ("more than two comments" is missing from the SQL).
SELECT data->'repo'->>'name', avg((data->'payload'->'issue'->'comments')::int) as comments
FROM {table}
WHERE data->>'type' = 'PushEvent'
  AND (data->'payload'->'issue'->'comments')::int IS NOT NULL
GROUP BY 1 ORDER BY 2 DESC
