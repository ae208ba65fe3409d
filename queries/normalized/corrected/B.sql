-- B corrected, over the normalized tables: event types ordered by frequency.
-- The type is a column of the root table: no join.
-- Correction: ties in count are broken by type ascending, bytewise (COLLATE
-- "C", like MongoDB), nulls first (like MongoDB).
SELECT e.{text:type} AS type, count(*) AS count FROM {table} e
GROUP BY 1
ORDER BY count DESC, e.{text:type} COLLATE "C" NULLS FIRST
