//! A query session of a PostgreSQL engine (`postgres`, its setups, the
//! normalized engine): the connection, what cancels its running statement,
//! and `--query-timeout` as the session's `statement_timeout`.

use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ghbench_core::stop::{Cancel, Running};
use ghbench_core::{ConnectError, EngineSpec};
use ghbench_engine::query::{BackendResult, QueryTimedOut};
use ghbench_engine::rows::Row;
use ghbench_engine::EngineError;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use crate::connect::{connect_cancellable, Canceller};
use crate::error::engine_error;

pub struct Session {
    client: Client,
    canceller: Canceller,
    /// Where the session is, for what a cancel says (`postgres at host:port`).
    place: String,
    /// `--query-timeout`, applied by [`Session::apply_limit`].
    limit: Option<Duration>,
    /// The limit the server has for this session (none when it connects).
    applied: Mutex<Option<Duration>>,
}

impl Deref for Session {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Session {
    pub async fn connect(spec: &EngineSpec, url: &str) -> Result<Session, ConnectError> {
        let (client, canceller) = connect_cancellable(spec, url).await?;
        let place = format!("{} at {}", spec.engine, ghbench_core::redact_url(url));
        Ok(Session { client, canceller, place, limit: None, applied: Mutex::new(None) })
    }

    /// A session of `setup`'s server at `url`: on Citus, once it is found
    /// to be a coordinator (see [`crate::citus::check_coordinator`]), so a
    /// URL at a plain PostgreSQL or at a worker is refused saying so.
    pub async fn open(setup: &crate::setup::JsonbSetup, url: &str) -> Result<Session, ConnectError> {
        let session = Session::connect(&setup.spec, url).await?;
        if setup.server == crate::setup::Server::Citus {
            crate::citus::check_coordinator(&session.client).await.map_err(|why| ConnectError::wrong_server(&setup.spec, url, why))?;
        }
        Ok(session)
    }

    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// See `Backend::limit_queries`; the server hears of it at the next
    /// [`Session::apply_limit`].
    pub fn limit_queries(&mut self, limit: Option<Duration>) {
        self.limit = limit;
    }

    /// Sets the session's `statement_timeout` to the limit (0: none), if it
    /// is not what the server has: from a query's `prepare`, not timed. Its
    /// error is typed: a lost connection found here is reconnected.
    pub async fn apply_limit(&self) -> Result<(), EngineError> {
        self.limit_statements(self.limit).await
    }

    /// No `statement_timeout` for what follows (index builds: no limit of
    /// ghbench's own cuts one); the next [`Session::apply_limit`] sets the
    /// limit again.
    pub async fn lift_limit(&self) -> Result<(), EngineError> {
        self.limit_statements(None).await
    }

    async fn limit_statements(&self, limit: Option<Duration>) -> Result<(), EngineError> {
        if *lock(&self.applied) == limit {
            return Ok(());
        }
        let millis = limit.map_or(0, |l| l.as_millis().max(1));
        self.client.batch_execute(&format!("SET statement_timeout = {millis}")).await.map_err(engine_error)?;
        *lock(&self.applied) = limit;
        Ok(())
    }

    /// `DISCARD ALL` (what a cold run clears without a restart). It resets
    /// every setting to the session's start, where a role's own limits come
    /// back: they are lifted again, and the limit applied at the next prepare.
    pub async fn discard_all(&self) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute("DISCARD ALL").await?;
        crate::connect::lift_limits(&self.client, false).await?;
        *lock(&self.applied) = None;
        Ok(())
    }

    /// `work` on this session, cancelled on the server if it is dropped
    /// unfinished (a limit, an abandoned client, Ctrl-C). `what` names it.
    pub async fn cancellable<T>(&self, what: &str, work: impl Future<Output = T>) -> T {
        let running = Running::start(format!("{}: {what}", self.place), self.cancel());
        let done = work.await;
        running.finished();
        done
    }

    /// Every row of `sql`'s result as every engine's are compared; a
    /// statement stopped by the limit fails as [`QueryTimedOut`].
    pub async fn rows(&self, sql: &str) -> BackendResult<Vec<Row>> {
        let what = format!("the statement {}", ghbench_engine::sql::head(sql));
        let started = Instant::now();
        let result = self.cancellable(&what, crate::backend::result_rows(&self.client, sql)).await;
        result.map_err(|e| self.cut_or(e, started.elapsed()))
    }

    /// The error of a statement that ran `ran`, said as cut by
    /// `--query-timeout` when the limit stopped it: SQLSTATE 57014 (query
    /// canceled) once the limit had passed. The code is the same for a cancel
    /// request, whose message differs only in words a server may translate
    /// (`lc_messages`); a cancel before the limit is not the limit's. The
    /// driver's error is typed either way ([`engine_error`]).
    pub fn cut_or(&self, error: tokio_postgres::Error, ran: Duration) -> anyhow::Error {
        let canceled = error.as_db_error().is_some_and(|db| db.code() == &SqlState::QUERY_CANCELED);
        let error = engine_error(error);
        match self.limit {
            Some(limit) if canceled && ran >= limit => QueryTimedOut::wrap(limit, error),
            _ => error.into(),
        }
    }

    fn cancel(&self) -> Cancel {
        let canceller = self.canceller.clone();
        Arc::new(move || {
            let canceller = canceller.clone();
            Box::pin(async move { canceller.cancel().await.map(|()| "cancel request sent (PostgreSQL stops the statement)".to_string()) })
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
