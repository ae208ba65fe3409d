-- B as published, over the normalized tables: event types ordered by
-- frequency. The type is a column of the root table: no join.
SELECT e.{text:type}, count(*) FROM {table} e GROUP BY 1 ORDER BY count DESC
