-- B corrected, tuned setup: as queries/postgres/corrected/B.sql (ties by type
-- name, bytewise, nulls first), reading the stored generated column type:
-- an index-only scan of the index on (type).
SELECT type, count(*) AS count FROM tuned.{table}
GROUP BY 1
ORDER BY count DESC, type COLLATE "C" NULLS FIRST
