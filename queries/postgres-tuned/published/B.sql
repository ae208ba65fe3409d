-- B as published, tuned setup: the paper's text reading the stored generated column type.
SELECT type, count(*) FROM tuned.{table} GROUP BY 1 ORDER BY count DESC
