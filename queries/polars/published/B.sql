-- B as published: event types ordered by frequency.
SELECT type, count(*) AS count FROM {table} GROUP BY type ORDER BY count DESC
