-- C corrected, over the normalized tables: the 10 most active actors.
-- The actor table has one row per document whose actor is an object: it is
-- counted alone, and the documents without one (no actor, or null, or not an
-- object: the root's actor_e is not false) are added under a null login, as
-- jsonb counts them. A join of every document to its actor would give the same
-- counts, slower; a partial index holds just those documents (indexes.sql).
-- Correction: ties in count are broken by login ascending, bytewise (COLLATE
-- "C", like MongoDB), nulls first (like MongoDB), so LIMIT 10 always keeps the
-- same actors.
SELECT actor, sum(n) AS count FROM (
    SELECT a.{text:actor.login} AS actor, count(*) AS n FROM {table:actor} a GROUP BY 1
    UNION ALL
    SELECT NULL, count(*) FROM {table} WHERE {column:actor:e} IS DISTINCT FROM false
) counted
GROUP BY actor HAVING sum(n) > 0
ORDER BY count DESC, actor COLLATE "C" NULLS FIRST
LIMIT 10
