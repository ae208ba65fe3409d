-- B corrected, tuned setup: as queries/mysql/corrected/B.sql (ties by type
-- name, bytewise with utf8mb4_nopad_bin, NULL first), reading the PERSISTENT
-- generated column event_type: a full scan of the index on (event_type)
-- alone, the narrowest index holding it (EXPLAIN: "Using index").
SELECT event_type AS type, COUNT(*) AS count FROM tuned.{table}
GROUP BY event_type
ORDER BY count DESC, event_type ASC
