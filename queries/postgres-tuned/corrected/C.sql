-- C corrected, tuned setup: as queries/postgres/corrected/C.sql (ties by
-- login, bytewise, nulls first, so LIMIT 10 keeps the same actors), reading
-- the stored generated column actor_login: an index-only scan of its index.
SELECT actor_login AS actor, count(*) AS count FROM tuned.{table}
GROUP BY 1
ORDER BY count DESC, actor_login COLLATE "C" NULLS FIRST
LIMIT 10
