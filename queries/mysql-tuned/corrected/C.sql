-- C corrected, tuned setup: as queries/mysql/corrected/C.sql (ties by login,
-- bytewise with utf8mb4_nopad_bin, NULL first, so LIMIT 10 keeps the same actors),
-- reading the PERSISTENT generated column actor_login: a full scan of its
-- index alone (EXPLAIN: "Using index").
SELECT actor_login AS actor, COUNT(*) AS count FROM tuned.{table}
GROUP BY actor_login
ORDER BY count DESC, actor_login ASC
LIMIT 10
