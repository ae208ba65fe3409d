-- C as published: the 10 most active actors.
-- Orders by count only, and LIMIT 10 can cut through a tie: which of the tied
-- actors make the cut is up to the engine.
SELECT data->'actor'->>'login' as actor, count(*) FROM {table}
GROUP BY actor ORDER BY count DESC LIMIT 10
