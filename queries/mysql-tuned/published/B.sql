-- B as published, tuned setup: the paper's text reading the PERSISTENT
-- generated column event_type, answered from the index on (event_type).
SELECT event_type, COUNT(*) AS count FROM tuned.{table} GROUP BY 1 ORDER BY count DESC
