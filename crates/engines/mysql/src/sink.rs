//! Loading into the MySQL family: `(id BIGINT PRIMARY KEY, data JSON)` plus
//! the setup's generated columns, one InnoDB transaction per hour that also
//! inserts the hour's ledger row, so a crash leaves no partial hour.
//!
//! `id` is the hour (hours since the Unix epoch) in the high 32 bits and the
//! line in the low ones, as the MongoDB engine's `_id` is `<hour>/<line>`: an
//! hour's rows are one range of the primary key, found without a scan to
//! count, reload or repair it, and a line can never be stored twice.
//!
//! An hour goes in as one `LOAD DATA LOCAL INFILE` fed batch by batch from
//! the decoder (fields split by byte 0x01 and no escaping at all: JSON text
//! holds neither a raw 0x01 nor a raw newline), or, where the server refuses
//! it (MySQL 8's `local_infile` is off by default; TiDB caps one `LOAD DATA`),
//! as multi-row inserts under the server's `max_allowed_packet`.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use ghbench_core::{Hour, ServerInfo, TableName};
use ghbench_engine::query::EXACT_COUNT_MAX_BYTES;
use ghbench_engine::load::{
    check_counts, check_estimate, check_stored, EngineBatch, EngineSink, HourRecord, RowEstimate, SinkError, StoredCheck, StoredHour, TableLock, Upkeep,
};
use mysql_async::prelude::Queryable;
use ghbench_core::stop::Running;
use mysql_async::{Conn, Value};
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cancel::{cancellable, Kill};
use crate::connect::Server;
use crate::error::{server_code, to_sink_error, OrSink};
use crate::ledger::{self, MyLedger};
use crate::setup::MysqlSetup;

/// Bits of `id` that hold the line.
const LINE_BITS: u32 = 32;

/// The first `id` of the hour `stem`: its hours since the Unix epoch, shifted.
pub fn hour_base(stem: &str) -> Result<i64, SinkError> {
    let hour: Hour = stem.parse().map_err(|e| SinkError::Other(format!("{e}")))?;
    let start = hour.date().and_hms_opt(hour.hour(), 0, 0).map(|t| t.and_utc().timestamp()).unwrap_or(0);
    Ok((start / 3600) << LINE_BITS)
}

/// The `id` of line `line` of the hour starting at `base`.
pub fn row_id(base: i64, line: u64) -> Result<i64, SinkError> {
    match u32::try_from(line) {
        Ok(line) => Ok(base + i64::from(line)),
        Err(_) => Err(SinkError::Other(format!("line {line} is past the {} lines an hour's ids hold", u32::MAX))),
    }
}

/// The hour's stem of the ids whose high bits are `hours` (see [`hour_base`]).
pub fn stem_of(hours: i64) -> Option<String> {
    let start = chrono::DateTime::from_timestamp(hours.checked_mul(3600)?, 0)?.naive_utc();
    Hour::new(start.date(), chrono::Timelike::hour(&start)).map(|h| h.stem())
}

/// How the hour's rows reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// One `LOAD DATA LOCAL INFILE` per hour, streamed.
    LoadData,
    /// Multi-row prepared inserts, each under `max_allowed_packet`.
    Inserts,
}

/// The server's errors for a `LOAD DATA LOCAL` it refuses: 4166 (MariaDB
/// 10.11 with `local_infile` off, measured), 1148 ER_NOT_ALLOWED_COMMAND
/// (older servers, TiDB), 3948 (MySQL 8: "Loading local data is disabled"),
/// 2068 (the client side's refusal).
pub fn refuses_local_infile(code: Option<u16>) -> bool {
    matches!(code, Some(4166 | 1148 | 3948 | 2068))
}

/// The `LOAD DATA` task: it gives the connection back with the rows stored
/// and the server's warnings.
type LoadTask = JoinHandle<(Server, Result<(u64, u16), mysql_async::Error>)>;

/// An hour's rows being sent.
enum Feed {
    /// The `LOAD DATA` runs in a task that owns the connection until the
    /// stream ends; batches go to it through `rows`.
    /// `running` kills the connection (the hour rolls back) if the sink is
    /// dropped with the hour open (a step's timeout, Ctrl-C).
    Streaming { rows: mpsc::Sender<std::io::Result<Bytes>>, load: LoadTask, running: Running },
    Inserting { stored: u64 },
}

struct OpenHour {
    base: i64,
    feed: Feed,
}

pub struct MysqlSink {
    setup: &'static MysqlSetup,
    /// None while a `LOAD DATA` task holds the connection, or once it was lost.
    server: Option<Server>,
    url: String,
    table: TableName,
    hour: Option<OpenHour>,
    /// Found on the first hour (see [`MysqlSink::probe_load_mode`]).
    mode: Option<LoadMode>,
    /// A second connection for what is asked with `&self` (the ledger, the
    /// stored hours), opened when first needed: it reads what is committed.
    reader: Mutex<Option<Server>>,
}

/// How long an aborted hour waits for its `LOAD DATA` to end before the
/// connection is dropped (the server then rolls the hour back itself).
const ABORT_WAIT: Duration = Duration::from_secs(60);

impl MysqlSink {
    pub fn new(setup: &'static MysqlSetup, server: Server, url: String, table: TableName) -> Self {
        MysqlSink { setup, server: Some(server), url, table, hour: None, mode: None, reader: Mutex::new(None) }
    }

    /// The reading connection, opened if needed.
    async fn reader(&self) -> Result<MappedMutexGuard<'_, Server>, SinkError> {
        let mut reader = self.reader.lock().await;
        // One that no longer answers (a server restarted meanwhile) is replaced.
        let answers = match reader.as_mut() {
            Some(r) => !r.conn.is_disconnected() && r.conn.ping().await.is_ok(),
            None => false,
        };
        if !answers {
            *reader = Some(Server::connect(&self.setup.spec, &self.url).await?);
        }
        Ok(MutexGuard::map(reader, |r| r.as_mut().expect("opened just above")))
    }

    fn ledger(&self) -> MyLedger<'_> {
        MyLedger { engine: &self.setup.spec.engine, table: &self.table }
    }

    fn data_table(&self) -> String {
        self.setup.table(&self.table)
    }

    fn server(&mut self) -> Result<&mut Server, SinkError> {
        self.server.as_mut().ok_or_else(|| SinkError::Other(format!("{}: the connection was lost during an hour; a new one takes over", self.setup.spec.engine)))
    }

    fn conn(&mut self) -> Result<&mut mysql_async::Conn, SinkError> {
        Ok(&mut self.server()?.conn)
    }

    /// The connection, replaced by a new one if the old one no longer
    /// answers (a server restarted since it was last used): for the steps
    /// outside an hour, which any sink of a run may be asked for.
    async fn answering(&mut self) -> Result<&mut mysql_async::Conn, SinkError> {
        let answers = match self.server.as_mut() {
            Some(server) => !server.conn.is_disconnected() && server.conn.ping().await.is_ok(),
            None => false,
        };
        if !answers {
            let mut server = Server::connect(&self.setup.spec, &self.url).await?;
            crate::connect::for_loading(&mut server.conn).await.sink()?;
            self.server = Some(server);
        }
        self.conn()
    }

    /// The `LOAD DATA` statement for this table: fields split by byte 0x01,
    /// lines by byte 0x0a, nothing enclosed, nothing escaped (backslashes in
    /// JSON stay as they are); the bytes as hex literals, which read the same
    /// whatever the session's `sql_mode` (`NO_BACKSLASH_ESCAPES`).
    fn load_sql(&self) -> String {
        format!(
            "LOAD DATA LOCAL INFILE 'ghbench-hour' INTO TABLE {} CHARACTER SET utf8mb4 \
             FIELDS TERMINATED BY x'01' ENCLOSED BY '' ESCAPED BY '' LINES TERMINATED BY x'0a' (id, data)",
            self.data_table()
        )
    }

    /// Whether this server takes `LOAD DATA LOCAL`: an empty one is sent (no
    /// row, no change); a refusal turns the sink to inserts for good.
    async fn probe_load_mode(&mut self) -> Result<LoadMode, SinkError> {
        if let Some(mode) = self.mode {
            return Ok(mode);
        }
        let sql = self.load_sql();
        let server = self.server()?;
        let mode = if !server.product().loads_with_load_data() {
            LoadMode::Inserts
        } else {
            server.conn.set_infile_handler(async { Ok(futures_util::stream::empty().boxed()) });
            match server.conn.query_drop(sql).await {
                Ok(()) => LoadMode::LoadData,
                Err(e) if refuses_local_infile(server_code(&e)) => LoadMode::Inserts,
                Err(e) => return Err(to_sink_error(&e)),
            }
        };
        self.mode = Some(mode);
        Ok(mode)
    }

    /// Opens the hour's transaction and its feed; `replacing`: its stored
    /// rows and entry are deleted first, in the same transaction.
    async fn open_hour(&mut self, stem: &str, replacing: bool) -> Result<(), SinkError> {
        let base = hour_base(stem)?;
        let mode = self.probe_load_mode().await?;
        self.conn()?.query_drop("START TRANSACTION").await.sink()?;
        if replacing {
            if let Err(e) = self.delete_hours(&[stem.to_string()]).await {
                let _ = self.conn()?.query_drop("ROLLBACK").await;
                return Err(e);
            }
        }
        let feed = match mode {
            LoadMode::Inserts => Feed::Inserting { stored: 0 },
            LoadMode::LoadData => {
                let sql = self.load_sql();
                let mut server = self.server.take().ok_or_else(|| SinkError::Other("no connection to load with".into()))?;
                let (rows, received) = mpsc::channel::<std::io::Result<Bytes>>(4);
                let stream = futures_util::stream::unfold(received, |mut received| async move { received.recv().await.map(|item| (item, received)) });
                server.conn.set_infile_handler(async move { Ok(stream.boxed()) });
                let id = server.conn.id();
                let load = tokio::spawn(async move {
                    let result = server.conn.query_drop(sql).await.map(|()| (server.conn.affected_rows(), server.conn.get_warnings()));
                    // A statement refused before the server asked for the
                    // rows leaves the handler, and the stream's receiver, on
                    // the connection: replaced, so the writer's next send
                    // fails at once instead of waiting on a full channel.
                    server.conn.set_infile_handler(async { Ok(futures_util::stream::empty().boxed()) });
                    (server, result)
                });
                let running = crate::cancel::running(&self.setup.spec, &self.url, id, &format!("loading hour {stem} into {}", self.data_table()), Kill::Connection);
                Feed::Streaming { rows, load, running }
            }
        };
        self.hour = Some(OpenHour { base, feed });
        Ok(())
    }

    /// Ends the hour's `LOAD DATA` and takes its connection back: the rows
    /// stored and the server's warnings.
    async fn finish_load(&mut self, load: LoadTask) -> Result<(u64, u16), SinkError> {
        let (server, result) = load.await.map_err(|e| SinkError::Other(format!("the load task failed: {e}")))?;
        self.server = Some(server);
        result.sink()
    }

    /// The first warnings of the last statement, for the message that fails the hour.
    async fn warnings(&mut self) -> String {
        let Ok(conn) = self.conn() else { return String::new() };
        let said: Vec<(String, u32, String)> = conn.query("SHOW WARNINGS LIMIT 5").await.unwrap_or_default();
        said.into_iter().map(|(level, code, message)| format!("{level} {code}: {message}")).collect::<Vec<_>>().join("; ")
    }

    /// Sends one batch as multi-row inserts, each statement under the
    /// server's packet limit (half of it, for the protocol's own bytes).
    async fn insert(&mut self, base: i64, batch: &EngineBatch) -> Result<u64, SinkError> {
        let table = self.data_table();
        let budget = (self.server()?.max_allowed_packet / 2).max(1 << 20);
        let mut stored = 0;
        for chunk in chunks(batch, budget) {
            let mut params = Vec::with_capacity(chunk.len() * 2);
            for doc in chunk {
                params.push(Value::Int(row_id(base, doc.line)?));
                params.push(Value::Bytes(doc.json.as_bytes().to_vec()));
            }
            let sql = format!("INSERT INTO {table} (id, data) VALUES {}", vec!["(?, ?)"; chunk.len()].join(", "));
            let conn = self.conn()?;
            conn.exec_drop(sql, params).await.sink()?;
            let stored_now = conn.affected_rows();
            if conn.get_warnings() > 0 {
                let said = self.warnings().await;
                return Err(SinkError::Other(format!("{table}: the server changed or dropped rows it was sent (warnings): {said}")));
            }
            stored += stored_now;
        }
        Ok(stored)
    }
}

/// The batch cut into inserts of at most `budget` bytes of JSON and 5,000
/// rows (a statement takes at most 65,535 placeholders); a document larger
/// than the budget goes alone.
fn chunks(batch: &EngineBatch, budget: usize) -> Vec<&[ghbench_engine::load::CleanDoc]> {
    const MAX_ROWS: usize = 5_000;
    let docs = batch.docs();
    let mut cut = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, doc) in docs.iter().enumerate() {
        let size = doc.json.len() + 32;
        if i > start && (bytes + size > budget || i - start >= MAX_ROWS) {
            cut.push(&docs[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < docs.len() {
        cut.push(&docs[start..]);
    }
    cut
}

impl MysqlSink {
    /// Deletes the stored hours and their ledger entries inside the open
    /// transaction: each hour's rows are one range of the key. An hour is
    /// replaceable when at most its entry's events are found (fewer: rows
    /// lost by hand, which a repair mends); the rows deleted.
    async fn delete_hours(&mut self, stems: &[String]) -> Result<u64, SinkError> {
        let (engine, table) = (self.setup.spec.engine.clone(), self.table.clone());
        let data = self.data_table();
        let conn = self.conn()?;
        let entries = MyLedger { engine: &engine, table: &table }.take_entries(conn, stems).await.sink()?;
        let mut deleted = 0;
        for stem in stems {
            let base = hour_base(stem)?;
            let sql = format!("DELETE FROM {data} WHERE id BETWEEN ? AND ?");
            conn.exec_drop(sql, (base, base + i64::from(u32::MAX))).await.sink()?;
            let rows = conn.affected_rows();
            let listed = entries.iter().find(|(s, _)| s == stem).map(|(_, events)| *events);
            if let Some(events) = listed.filter(|&events| rows > events) {
                return Err(SinkError::Other(format!(
                    "cannot reload hour {stem} of {data}: its ledger lists {events} events and its key range holds {rows} rows; load the table again with --drop"
                )));
            }
            deleted += rows;
        }
        Ok(deleted)
    }

}

/// The table's rows by hour (by the high bits of their key), in one pass.
async fn rows_per_hour(conn: &mut Conn, data: &str) -> Result<BTreeMap<String, u64>, SinkError> {
    let sql = format!("SELECT id >> {LINE_BITS}, COUNT(*) FROM {data} GROUP BY 1");
    let counted: Vec<(i64, i64)> = conn.query(sql).await.sink()?;
    Ok(counted
        .into_iter()
        .map(|(hours, n)| (stem_of(hours).unwrap_or_else(|| format!("keys of no hour ({hours})")), n.max(0) as u64))
        .collect())
}

/// A batch as `LOAD DATA` reads it (`<id> 0x01 <json> 0x0a` a line), in
/// pieces of about 1 MiB (a document larger than that is a piece alone).
fn load_pieces(base: i64, batch: &EngineBatch) -> Result<Vec<Bytes>, SinkError> {
    const PIECE: usize = 1 << 20;
    let mut pieces = Vec::new();
    let mut piece = BytesMut::with_capacity(PIECE);
    for doc in batch.docs() {
        if !piece.is_empty() && piece.len() + doc.json.len() + 24 > PIECE {
            pieces.push(std::mem::replace(&mut piece, BytesMut::with_capacity(PIECE)).freeze());
        }
        piece.put_slice(row_id(base, doc.line)?.to_string().as_bytes());
        piece.put_u8(0x01);
        piece.put_slice(doc.json.as_bytes());
        piece.put_u8(b'\n');
    }
    if !piece.is_empty() {
        pieces.push(piece.freeze());
    }
    Ok(pieces)
}

/// Whether `table` exists in `database` (None: the URL's).
pub async fn table_exists(conn: &mut Conn, database: Option<&str>, table: &str) -> Result<bool, mysql_async::Error> {
    let sql = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?";
    let n: Option<u64> = conn.exec_first(sql, (database, table)).await?;
    Ok(n.unwrap_or(0) > 0)
}

/// Serialises ghbench's DDL on one server: concurrent `CREATE ... IF NOT
/// EXISTS` and the ledger's cleanup must not interleave.
const DDL_LOCK: &str = "ghbench:ddl";

#[async_trait]
impl EngineSink for MysqlSink {
    async fn describe(&self) -> Result<ServerInfo, SinkError> {
        let mut reader = self.reader().await?;
        let server = &mut *reader;
        let mut info = crate::connect::describe(&self.setup.spec, server, &self.url).await.sink()?;
        // Before the first hour, what the probe will find: the product's
        // way, unless the server turns local_infile off.
        let infile_off = info.settings.get("local_infile").is_some_and(|v| v.eq_ignore_ascii_case("OFF"));
        let mode = self.mode.unwrap_or(match server.product().loads_with_load_data() && !infile_off {
            true => LoadMode::LoadData,
            false => LoadMode::Inserts,
        });
        let loading = match mode {
            LoadMode::Inserts => "multi-row INSERTs (the server refuses LOAD DATA LOCAL: local_infile is off, or the product caps it)",
            LoadMode::LoadData => "LOAD DATA LOCAL INFILE, one per hour, streamed",
        };
        info.settings.insert("loading".into(), loading.into());
        Ok(info)
    }

    /// No connection outside a streamed hour, or one a dropped or failed
    /// call left out of step with its server.
    fn is_broken(&self) -> bool {
        match &self.server {
            Some(server) => server.conn.is_disconnected(),
            None => !matches!(self.hour, Some(OpenHour { feed: Feed::Streaming { .. }, .. })),
        }
    }

    /// Refuses a table name the server reserves (`load`, `range`, `key`,
    /// ...): the server's own parser says, on a statement that reads nothing.
    async fn check_name(&self) -> Result<(), SinkError> {
        let mut reader = self.reader().await?;
        let conn = &mut reader.conn;
        match conn.query_drop(format!("SELECT 1 FROM (SELECT 1) AS {}", self.table)).await {
            Ok(()) => Ok(()),
            Err(e) if server_code(&e) == Some(1064) => Err(SinkError::Other(format!(
                "'{}' is a reserved word in {} and cannot name a table unquoted: choose another --table",
                self.table,
                self.setup.spec.engine
            ))),
            Err(e) => Err(to_sink_error(&e)),
        }
    }

    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        let mut reader = self.reader().await?;
        let conn = &mut reader.conn;
        self.ledger().hour_done(conn, stem).await.sink()
    }

    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        let data = self.data_table();
        let product = self.server()?.product();
        let creates: Vec<String> = self.setup.create_statements(&self.table).iter().map(|s| product.adapt_ddl(s)).collect();
        let (engine, table) = (self.setup.spec.engine.clone(), self.table.clone());
        let ledger = MyLedger { engine: &engine, table: &table };
        let conn = self.answering().await?;
        let got: Option<Option<i64>> = conn.exec_first("SELECT GET_LOCK(?, ?)", (DDL_LOCK, crate::connect::LOCK_WAIT_SECONDS)).await.sink()?;
        if got.flatten() != Some(1) {
            return Err(SinkError::Other(format!("another ghbench run held the server's DDL lock ({DDL_LOCK}) for {} s", crate::connect::LOCK_WAIT_SECONDS)));
        }
        let preparing = async {
            for statement in ledger::create_statements() {
                conn.query_drop(statement).await?;
            }
            if drop {
                conn.query_drop(format!("DROP TABLE IF EXISTS {data}")).await?;
            }
            Ok::<_, mysql_async::Error>(())
        }
        .await;
        let result = match preparing {
            Err(e) => Err(to_sink_error(&e)),
            Ok(()) => {
                // Entries whose table is gone (dropped, by hand or just now) are forgotten.
                let database = self.setup.database().map(str::to_string);
                let conn = self.conn()?;
                match table_exists(conn, database.as_deref(), table.as_str()).await.sink() {
                    Ok(exists) => {
                        let mut done = match exists {
                            true => Ok(()),
                            false => ledger.forget(conn).await.sink(),
                        };
                        for statement in &creates {
                            if done.is_err() {
                                break;
                            }
                            done = conn.query_drop(statement).await.sink();
                        }
                        done
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let conn = self.conn()?;
        let _ = conn.exec_drop("DO RELEASE_LOCK(?)", (DDL_LOCK,)).await;
        result
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        let mut reader = self.reader().await?;
        let conn = &mut reader.conn;
        self.ledger().completed_hours(conn).await.sink()
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        let mut reader = self.reader().await?;
        let conn = &mut reader.conn;
        self.ledger().events(conn).await.sink()
    }

    /// The ledger's entries. An hour's rows commit with its entry, so only a
    /// hand on the table can part them: the hours a run touches are counted
    /// in their key ranges; the whole table (`StoredCheck::Whole`) counted and,
    /// when it differs, counted by hour.
    async fn stored_hours(&self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        let what = format!("{} table {}", self.setup.spec.engine, self.data_table());
        let data = self.data_table();
        let mut reader = self.reader().await?;
        let conn = &mut reader.conn;
        let mut stored = self.ledger().stored_hours(conn).await.sink()?;
        // The ledger commits with its rows, so only a hand on the table parts
        // them. `--check-stored` counts, and by hour where the count differs;
        // so does any check up to 1 GiB (a moment). Beyond, the server's
        // estimate stands against the ledger, as for PostgreSQL: counting
        // would read most of a year's table on its rerun.
        let sql = format!(
            "SELECT COALESCE((SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?), 0),
                    COALESCE((SELECT DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?), 0),
                    EXISTS (SELECT 1 FROM {data})"
        );
        let (database, table) = (self.setup.database(), self.table.as_str());
        let said: Option<(u64, u64, bool)> = conn.exec_first(sql, (database, table, database, table)).await.sink()?;
        let (estimate, bytes, any) = said.unwrap_or((0, 0, false));
        if *check == StoredCheck::Whole || bytes <= EXACT_COUNT_MAX_BYTES {
            let (spec, id) = (&self.setup.spec, conn.id());
            let count = format!("SELECT COUNT(*) FROM {data}");
            let by_hour = format!("counting {data} by hour");
            let rows: Option<i64> = cancellable(spec, &self.url, id, &count, conn.query_first(&count)).await.sink()?;
            let per_hour = cancellable(spec, &self.url, id, &by_hour, rows_per_hour(conn, &data));
            check_counts(&mut stored, &what, rows.unwrap_or(0).max(0) as u64, || per_hour).await?;
        } else {
            check_estimate(&mut stored, &what, RowEstimate { rows: estimate, from: "InnoDB's statistics (TABLE_ROWS, an estimate)", any })?;
        }
        Ok(stored)
    }

    async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.open_hour(stem, false).await
    }

    /// In the hour's transaction, before its rows: its ledger entry and its
    /// key range are deleted (see [`MysqlSink::delete_hours`]).
    async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        self.open_hour(stem, true).await
    }

    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        let Some(hour) = self.hour.as_mut() else { return Err(SinkError::Other("write outside an hour".into())) };
        let base = hour.base;
        match &mut hour.feed {
            Feed::Streaming { rows, .. } => {
                // Sent in pieces of about 1 MiB: the driver sends each as one
                // packet, which must stay under the server's max_allowed_packet.
                let mut sent_all = true;
                for piece in load_pieces(base, batch)? {
                    if rows.send(Ok(piece)).await.is_err() {
                        sent_all = false;
                        break;
                    }
                }
                if sent_all {
                    return Ok(());
                }
                // The server ended the load early: its error says why.
                        let Some(OpenHour { feed: Feed::Streaming { load, running, .. }, .. }) = self.hour.take() else { unreachable!("matched above") };
                let ended = self.finish_load(load).await;
                running.finished();
                if let Ok(conn) = self.conn() {
                    let _ = conn.query_drop("ROLLBACK").await;
                }
                Err(ended.err().unwrap_or_else(|| SinkError::Other("the server ended the load before the hour's last row".into())))
            }
            Feed::Inserting { .. } => {
                let n = self.insert(base, batch).await?;
                if let Some(OpenHour { feed: Feed::Inserting { stored }, .. }) = self.hour.as_mut() {
                    *stored += n;
                }
                Ok(())
            }
        }
    }

    async fn commit_hour(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        let hour = self.hour.take().ok_or_else(|| SinkError::Other("commit outside an hour".into()))?;
        let stored = match hour.feed {
            Feed::Inserting { stored } => Ok(stored),
            Feed::Streaming { rows, load, running } => {
                // The stream's end ends the statement.
                drop(rows);
                let finished = self.finish_load(load).await;
                running.finished();
                match finished {
                    Ok((stored, 0)) => Ok(stored),
                    Ok((_, warnings)) => {
                        let said = self.warnings().await;
                        Err(SinkError::Other(format!("{}: the server changed or dropped rows of hour {} ({warnings} warnings): {said}", self.data_table(), r.hour)))
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let recorded = match stored {
            Ok(rows) => match check_stored(rows, r) {
                Ok(()) => {
                    let (engine, table) = (self.setup.spec.engine.clone(), self.table.clone());
                    let conn = self.conn()?;
                    // The primary key refuses a second record of the hour (a
                    // concurrent run), which rolls this one back.
                    MyLedger { engine: &engine, table: &table }.record(conn, r).await.sink().map(|()| rows)
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match recorded {
            Ok(rows) => {
                self.conn()?.query_drop("COMMIT").await.sink()?;
                Ok(rows)
            }
            Err(e) => {
                self.abort_hour().await;
                Err(e)
            }
        }
    }

    async fn abort_hour(&mut self) {
        if let Some(OpenHour { feed: Feed::Streaming { rows, load, running }, .. }) = self.hour.take() {
            // The stream ends and the statement with it; the rollback below
            // takes its rows. A server that does not answer loses the
            // connection instead, and rolls back on its own.
            drop(rows);
            let abort = load.abort_handle();
            match tokio::time::timeout(ABORT_WAIT, self.finish_load(load)).await {
                Ok(_) => running.finished(),
                // Dropped armed: the connection is killed, the hour rolled back.
                Err(_) => {
                    abort.abort();
                    drop(running);
                }
            }
        }
        if let Ok(conn) = self.conn() {
            if conn.query_drop("ROLLBACK").await.is_err() {
                self.server = None;
            }
        }
    }

    async fn lock(&self, _limit: Duration) -> Result<TableLock, SinkError> {
        crate::lock::lock(&self.setup.spec, &self.url, &self.setup.lock_key(&self.table), &self.table).await
    }

    /// `ANALYZE TABLE`, timed and recorded with the ledger: InnoDB's
    /// statistics are sampled as rows change; after a load they are taken
    /// afresh so no plan is made on a guess.
    async fn after_load(&mut self) -> Result<Option<Upkeep>, SinkError> {
        const STEP: &str = "ANALYZE TABLE";
        let started = Instant::now();
        let data = self.data_table();
        let (spec, url) = (&self.setup.spec, self.url.clone());
        let conn = self.answering().await?;
        let statement = format!("{STEP} {data}");
        let said: Vec<(String, String, String, String)> = cancellable(spec, &url, conn.id(), &statement, conn.query(&statement)).await.sink()?;
        if let Some((_, _, _, message)) = said.iter().find(|(_, _, kind, _)| kind.eq_ignore_ascii_case("error")) {
            return Err(SinkError::Other(format!("{STEP} {data}: {message}")));
        }
        let seconds = started.elapsed().as_secs_f64();
        let (engine, table) = (self.setup.spec.engine.clone(), self.table.clone());
        MyLedger { engine: &engine, table: &table }.record_upkeep(self.conn()?, STEP, seconds).await.sink()?;
        Ok(Some(Upkeep { step: format!("{STEP} {data}"), seconds }))
    }

    async fn close(&mut self) {
        self.abort_hour().await;
        for server in [self.server.take(), self.reader.lock().await.take()].into_iter().flatten() {
            let _ = server.conn.disconnect().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hours_rows_are_one_key_range_and_the_range_names_the_hour() {
        let base = hour_base("2015-01-01-15").unwrap();
        assert_eq!(base >> LINE_BITS, (1_420_070_400 + 15 * 3600) / 3600);
        assert_eq!(row_id(base, 7_702).unwrap(), base + 7_702);
        assert_eq!(stem_of(row_id(base, 1).unwrap() >> LINE_BITS).as_deref(), Some("2015-01-01-15"));
        assert_eq!(hour_base("2015-01-01-16").unwrap() - base, 1 << LINE_BITS, "hours follow each other");
        assert!(row_id(base, u64::from(u32::MAX) + 1).is_err());
        assert!(hour_base("not-an-hour").is_err());
        assert!(refuses_local_infile(Some(4166)) && refuses_local_infile(Some(3948)) && refuses_local_infile(Some(1148)) && !refuses_local_infile(Some(1064)));
    }
}
