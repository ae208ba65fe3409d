-- B corrected: event types ordered by frequency.
-- Correction: ties in count (possible on small data) are broken by type name
-- ascending, bytewise (COLLATE "C", like MongoDB), nulls first (like MongoDB).
SELECT data->>'type' AS type, count(*) AS count FROM {table}
GROUP BY 1
ORDER BY count DESC, (data->>'type') COLLATE "C" NULLS FIRST
