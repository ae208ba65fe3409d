-- B corrected: event types ordered by frequency.
-- Correction: ties in count (possible on small data) are broken by type name
-- ascending, bytewise, nulls first (like MongoDB).
SELECT type, count(*) AS count FROM {table}
GROUP BY type
ORDER BY count DESC, type ASC NULLS FIRST
