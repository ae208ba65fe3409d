-- C as published: the 10 most active actors, reading the VIRTUAL generated
-- column actor_login (data->'actor'->>'login').
-- Orders by count only, and LIMIT 10 can cut through a tie: which of the tied
-- actors make the cut is up to the engine.
SELECT actor_login AS actor, COUNT(*) AS count FROM {table}
GROUP BY actor ORDER BY count DESC LIMIT 10
