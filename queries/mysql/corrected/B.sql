-- B corrected: event types ordered by frequency, reading the VIRTUAL
-- generated column event_type (data->>'type').
-- Correction: ties in count (possible on small data) are broken by type name
-- ascending, bytewise (utf8mb4_nopad_bin, like PostgreSQL's COLLATE "C" and
-- MongoDB), NULL first (MariaDB's ascending order, like MongoDB).
SELECT event_type AS type, COUNT(*) AS count FROM {table}
GROUP BY event_type
ORDER BY count DESC, event_type ASC
