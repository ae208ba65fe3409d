-- The paper's five PostgreSQL expression indexes, in its order (reference:
-- "The five indexes"). One statement per index; {table} is replaced by the
-- validated table name.
-- Changed from the paper: each index is named <table>_<what> and created
-- IF NOT EXISTS, so `ghbench index` can be run again without adding a
-- duplicate index (the paper's unnamed CREATE INDEX would).
CREATE INDEX IF NOT EXISTS {table}_repo_name ON {table} ((data->'repo'->>'name'));
CREATE INDEX IF NOT EXISTS {table}_payload_action ON {table} ((data->'payload'->>'action'));
CREATE INDEX IF NOT EXISTS {table}_type ON {table} ((data->>'type'));
CREATE INDEX IF NOT EXISTS {table}_actor_login ON {table} ((data->'actor'->>'login'));
CREATE INDEX IF NOT EXISTS {table}_issue_comments ON {table} ((data->'payload'->'issue'->'comments'));
