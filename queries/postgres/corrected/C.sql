-- C corrected: the 10 most active actors.
-- Correction: ties in count are broken by login ascending, bytewise
-- (COLLATE "C", like MongoDB), nulls first (like MongoDB), so LIMIT 10 always
-- keeps the same actors.
SELECT data->'actor'->>'login' AS actor, count(*) AS count FROM {table}
GROUP BY 1
ORDER BY count DESC, (data->'actor'->>'login') COLLATE "C" NULLS FIRST
LIMIT 10
