-- C as published, tuned setup: the paper's text reading the stored generated
-- column actor_login. Orders by count only, and LIMIT 10 can cut through a tie.
SELECT actor_login as actor, count(*) FROM tuned.{table}
GROUP BY actor ORDER BY count DESC LIMIT 10
