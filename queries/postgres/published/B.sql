-- B as published: event types ordered by frequency.
SELECT data->>'type', count(*) FROM {table} GROUP BY 1 ORDER BY count DESC
