-- The paper's setup in the MySQL family (queries/mysql/setup.json lists each
-- change and its source): the documents in one JSON column, and one VIRTUAL
-- generated column per path the paper indexes, which is how MariaDB and MySQL
-- index a JSON path (MariaDB 10.11 has no functional indexes, and matches no
-- expression to a generated column: the queries name the columns).
-- The loader fills id (the hour and the line) and data (the document's text)
-- with LOAD DATA LOCAL INFILE (id, data); the generated columns are computed
-- by the server, never named by the loader. VIRTUAL columns take no space in
-- the table: their values live only in the secondary indexes on them.
-- Text columns read as PostgreSQL's ->> does: a missing path and a JSON null
-- are NULL (JSON_UNQUOTE alone would give the string 'null'), a string its
-- unescaped text, a number or boolean its JSON text. utf8mb4_nopad_bin compares by
-- code point, as JSON strings are compared, and is NO PAD: 'a' and 'a ' stay two
-- values, as in PostgreSQL's COLLATE "C" and MongoDB (utf8mb4_bin pads with
-- spaces and would merge them; MySQL 8 and TiDB get utf8mb4_0900_bin, their
-- NO PAD binary collation, from the engine). Sizes are generous (GitHub's longest
-- repository name is 140 characters, its longest login 39) and small enough
-- for InnoDB's 3072-byte key limit in the tuned setup's composite indexes; a
-- longer value is an error in a strict-mode INSERT but only a warning (1265,
-- the value cut) under LOAD DATA LOCAL, so the loader checks for warnings.
-- issue_comments holds the comments only where they are a JSON number
-- (JSON_TYPE INTEGER or DOUBLE), NULL for strings, booleans, nulls and a
-- missing path, as MongoDB's $gt and $avg read them and as the PostgreSQL
-- corrected D's CASE does.
CREATE TABLE IF NOT EXISTS {table} (
    id BIGINT NOT NULL PRIMARY KEY,
    data JSON NOT NULL,
    repo_name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin GENERATED ALWAYS AS (
        CASE WHEN JSON_TYPE(JSON_EXTRACT(data, '$.repo.name')) = 'NULL' THEN NULL
             ELSE JSON_UNQUOTE(JSON_EXTRACT(data, '$.repo.name')) END) VIRTUAL,
    payload_action VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin GENERATED ALWAYS AS (
        CASE WHEN JSON_TYPE(JSON_EXTRACT(data, '$.payload.action')) = 'NULL' THEN NULL
             ELSE JSON_UNQUOTE(JSON_EXTRACT(data, '$.payload.action')) END) VIRTUAL,
    event_type VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin GENERATED ALWAYS AS (
        CASE WHEN JSON_TYPE(JSON_EXTRACT(data, '$.type')) = 'NULL' THEN NULL
             ELSE JSON_UNQUOTE(JSON_EXTRACT(data, '$.type')) END) VIRTUAL,
    actor_login VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin GENERATED ALWAYS AS (
        CASE WHEN JSON_TYPE(JSON_EXTRACT(data, '$.actor.login')) = 'NULL' THEN NULL
             ELSE JSON_UNQUOTE(JSON_EXTRACT(data, '$.actor.login')) END) VIRTUAL,
    issue_comments DOUBLE GENERATED ALWAYS AS (
        CASE WHEN JSON_TYPE(JSON_EXTRACT(data, '$.payload.issue.comments')) IN ('INTEGER', 'DOUBLE')
             THEN CAST(JSON_EXTRACT(data, '$.payload.issue.comments') AS DOUBLE) END) VIRTUAL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
