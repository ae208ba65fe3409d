-- C as published, tuned setup: the paper's text reading the PERSISTENT
-- generated column actor_login, answered from its index. Orders by count
-- only, and LIMIT 10 can cut through a tie.
SELECT actor_login AS actor, COUNT(*) AS count FROM tuned.{table}
GROUP BY actor ORDER BY count DESC LIMIT 10
