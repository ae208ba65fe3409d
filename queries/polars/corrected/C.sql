-- C corrected: the 10 most active actors.
-- Correction: ties in count are broken by login ascending, bytewise, nulls
-- first (like MongoDB), so LIMIT 10 always keeps the same actors.
SELECT "actor.login" AS actor, count(*) AS count FROM {table}
GROUP BY "actor.login"
ORDER BY count DESC, actor ASC NULLS FIRST
LIMIT 10
