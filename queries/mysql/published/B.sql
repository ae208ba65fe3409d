-- B as published: event types ordered by frequency, reading the VIRTUAL
-- generated column event_type (data->>'type').
SELECT event_type, COUNT(*) AS count FROM {table} GROUP BY 1 ORDER BY count DESC
