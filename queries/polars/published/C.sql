-- C as published: the 10 most active actors.
-- Orders by count only, and LIMIT 10 can cut through a tie: which of the tied
-- actors make the cut is up to the engine.
SELECT "actor.login" AS actor, count(*) AS count FROM {table}
GROUP BY "actor.login" ORDER BY count DESC LIMIT 10
