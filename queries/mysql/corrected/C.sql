-- C corrected: the 10 most active actors, reading the VIRTUAL generated
-- column actor_login (data->'actor'->>'login').
-- Correction: ties in count are broken by login ascending, bytewise
-- (utf8mb4_nopad_bin, like PostgreSQL's COLLATE "C" and MongoDB), NULL first
-- (MariaDB's ascending order, like MongoDB), so LIMIT 10 always keeps the
-- same actors.
SELECT actor_login AS actor, COUNT(*) AS count FROM {table}
GROUP BY actor_login
ORDER BY count DESC, actor_login ASC
LIMIT 10
