-- C as published, over the normalized tables: the 10 most active actors.
-- The actor table has one row per document that has an actor: it is counted
-- alone, and the documents without one (the root's rows beyond the actor
-- table's) are added under a null login, as jsonb counts them; a join of every
-- document to its actor would give the same counts, slower.
-- Orders by count only, and LIMIT 10 can cut through a tie.
SELECT actor, sum(n) AS count FROM (
    SELECT a.{column:actor.login:s} AS actor, count(*) AS n FROM {table:actor} a GROUP BY 1
    UNION ALL
    SELECT NULL, (SELECT count(*) FROM {table}) - (SELECT count(*) FROM {table:actor})
) counted
GROUP BY actor HAVING sum(n) > 0
ORDER BY count DESC LIMIT 10
