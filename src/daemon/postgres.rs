//! The fleet's store: one PostgreSQL database that several `mcpprobe daemon` processes share
//! (issue 25). It is the coordination: claims (the target's row taken `FOR UPDATE SKIP LOCKED`,
//! one run per (target, slot) by a unique index), leases with epochs for runs and for hosts,
//! and the results every worker serves. The same versioned plain-SQL migrations as the SQLite
//! store, in PostgreSQL's dialect (`migrations/postgres/NNN_*.sql`), applied under an advisory
//! lock so that daemons starting together migrate once.
//!
//! The [`Store`] interface is synchronous (the scheduler calls it on blocking threads); this
//! store drives tokio-postgres through a deadpool pool on a small runtime of its own, so a call
//! blocks its (blocking) thread, never an async worker of the daemon. The database's URL is a
//! secret (it usually holds a password): errors name the store by the environment variable it
//! came from, never by the URL, and strip the URL and its password from every message.

use std::future::Future;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use secrecy::{ExposeSecret as _, SecretString};
use tokio_postgres::{NoTls, Row};

use super::store::{
    Claim, Claimed, Counts, Finished, HostLease, ImportSummary, ImportedTarget, ProofRecord,
    Retention, RunDocuments, RunStatus, RunSummary, Store, StoreError, StoredBaseline, TargetRow,
    Totals,
};

/// The migrations, in order; the schema version is their count (as in the SQLite store).
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/postgres/001_init.sql"),
    include_str!("migrations/postgres/002_latest_run.sql"),
    include_str!("migrations/postgres/003_run_proofs.sql"),
    include_str!("migrations/postgres/004_documents_retention_counters.sql"),
    include_str!("migrations/postgres/005_host_leases.sql"),
    include_str!("migrations/postgres/006_imported_targets.sql"),
];

/// The advisory lock migrations run under ("mcpprobe" in ASCII): daemons starting together
/// wait for the first to finish migrating, then find nothing left to do.
const MIGRATION_LOCK: i64 = 0x6d63_7070_726f_6265;
/// The advisory lock `sync_targets` runs under: two daemons syncing the same targets at once
/// would otherwise lock their rows in different orders.
const TARGETS_LOCK: i64 = MIGRATION_LOCK + 1;

/// Connections the pool keeps at most (the scheduler's claims and records, renewals, reads).
const POOL_SIZE: usize = 8;
/// How long a call waits for a connection, and a connection for the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest any statement may run (set on every connection unless the URL sets options).
const STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// What went wrong inside a call, before it is named for the user.
#[derive(Debug, thiserror::Error)]
enum PgError {
    #[error("{}", pool_error(.0))]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("{}", describe(.0))]
    Db(#[from] tokio_postgres::Error),
}

/// A tokio-postgres error with the server's own message (its `Display` says only "db error").
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} {}: {}", db.severity(), db.code().code(), db.message());
    }
    match std::error::Error::source(e) {
        Some(source) => format!("{e}: {source}"),
        None => e.to_string(),
    }
}

/// A pool's error, the server's message inside it when a connection could not be made.
fn pool_error(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => describe(e),
        deadpool_postgres::PoolError::Timeout(_) => {
            "no connection to the database within the timeout".to_string()
        }
        other => other.to_string(),
    }
}

/// The shared store.
pub struct PgStore {
    pool: Pool,
    /// The runtime the pool's connections live on; shut down in the background on drop (a
    /// store dropped on an async thread must not block it).
    runtime: Option<tokio::runtime::Runtime>,
    /// How errors name the database (`PostgreSQL (MCPPROBE_DATABASE_URL)`), never its URL.
    label: String,
    /// What is stripped from every error message: the URL and its password.
    secrets: Vec<String>,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn get<T: for<'a> tokio_postgres::types::FromSql<'a>>(r: &Row, i: usize) -> Result<T, PgError> {
    r.try_get(i).map_err(PgError::from)
}

fn count_u32(r: &Row, i: usize) -> Result<u32, PgError> {
    Ok(u32::try_from(get::<i64>(r, i)?.max(0)).unwrap_or(u32::MAX))
}

/// A run's summary columns (as the SQLite store's).
const RUN_COLUMNS: &str = "runs.id, runs.target, runs.slot, runs.started_ms, runs.finished_ms, \
     runs.status, runs.exit_code, runs.critical, runs.high, runs.medium, runs.low, runs.info, \
     runs.tool_list_sha256, runs.requests, runs.reason, \
     proofs.method, proofs.host, proofs.verified_ms, proofs.expires_ms, runs.worker";
const RUNS: &str = "runs LEFT JOIN run_proofs ON run_proofs.run = runs.id \
     LEFT JOIN proofs ON proofs.id = run_proofs.proof";

fn run_row(r: &Row) -> Result<RunSummary, PgError> {
    let status: String = get(r, 5)?;
    Ok(RunSummary {
        id: get(r, 0)?,
        target: get(r, 1)?,
        slot: get(r, 2)?,
        started_ms: get(r, 3)?,
        finished_ms: get(r, 4)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted),
        exit_code: get(r, 6)?,
        counts: Counts {
            critical: count_u32(r, 7)?,
            high: count_u32(r, 8)?,
            medium: count_u32(r, 9)?,
            low: count_u32(r, 10)?,
            info: count_u32(r, 11)?,
        },
        tool_list_sha256: get(r, 12)?,
        requests: get::<i64>(r, 13)?.max(0).unsigned_abs(),
        reason: get(r, 14)?,
        proof: match get::<Option<String>>(r, 15)? {
            Some(method) => Some(ProofRecord {
                method,
                host: get(r, 16)?,
                verified_ms: get(r, 17)?,
                expires_ms: get(r, 18)?,
            }),
            None => None,
        },
        worker: get(r, 19)?,
    })
}

fn baseline_row(r: &Row) -> Result<StoredBaseline, PgError> {
    Ok(StoredBaseline {
        id: get(r, 0)?,
        json: get(r, 1)?,
        accepted_ms: get(r, 2)?,
    })
}

fn rows<T>(rows: &[Row], f: impl Fn(&Row) -> Result<T, PgError>) -> Result<Vec<T>, PgError> {
    rows.iter().map(f).collect()
}

/// Adds `by` to counter `name` (what `/metrics` reports).
async fn count(
    tx: &deadpool_postgres::Transaction<'_>,
    name: &str,
    by: i64,
) -> Result<(), PgError> {
    tx.execute(
        "INSERT INTO counters (name, value) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value",
        &[&name, &by],
    )
    .await?;
    Ok(())
}

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Connects to the database at `url` (named `label` in errors: the environment variable
    /// it came from) and brings its schema up to date. A database from a newer mcpprobe is
    /// refused, never downgraded.
    pub fn connect(url: &SecretString, label: &str) -> Result<PgStore, StoreError> {
        PgStore::connect_at(url, label, MIGRATIONS.len())
    }

    /// [`PgStore::connect`], migrating no further than schema `version` (for the tests of
    /// migrations from a previous version).
    #[doc(hidden)]
    pub fn connect_at(
        url: &SecretString,
        label: &str,
        version: usize,
    ) -> Result<PgStore, StoreError> {
        let label = format!("PostgreSQL ({label})");
        let mut secrets = vec![url.expose_secret().to_string()];
        let config = url
            .expose_secret()
            .parse::<tokio_postgres::Config>()
            .map_err(|e| StoreError::Database {
                path: label.clone(),
                // The parser's message quotes no part of the URL; kept short regardless.
                message: format!("the URL is not a PostgreSQL connection URL ({e})"),
            })?;
        if let Some(pw) = config.get_password() {
            secrets.push(String::from_utf8_lossy(pw).into_owned());
        }
        let mut config = config;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_options().is_none() {
            config.options(format!("-c statement_timeout={STATEMENT_TIMEOUT_MS}"));
        }
        config.application_name("mcpprobe");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mcpprobe-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database {
                path: label.clone(),
                message: format!("cannot start the database client's threads: {e}"),
            })?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = {
            let _in = runtime.enter();
            Pool::builder(manager)
                .max_size(POOL_SIZE)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(CONNECT_TIMEOUT))
                .create_timeout(Some(CONNECT_TIMEOUT))
                .recycle_timeout(Some(CONNECT_TIMEOUT))
                .build()
                .map_err(|e| StoreError::Database {
                    path: label.clone(),
                    message: e.to_string(),
                })?
        };
        let store = PgStore {
            pool,
            runtime: Some(runtime),
            label,
            secrets,
        };
        store.migrate(version)?;
        Ok(store)
    }

    /// Applies the migrations after the database's version up to `upto`, one transaction
    /// holding the advisory migration lock.
    fn migrate(&self, upto: usize) -> Result<(), StoreError> {
        let known = MIGRATIONS.len() as i64;
        let found = self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS mcpprobe_schema (version BIGINT NOT NULL);
                 INSERT INTO mcpprobe_schema (version)
                     SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM mcpprobe_schema);",
            )
            .await?;
            let row = tx
                .query_one("SELECT max(version) FROM mcpprobe_schema", &[])
                .await?;
            let version: i64 = get::<Option<i64>>(&row, 0)?.unwrap_or(0);
            if version > known {
                return Ok(version);
            }
            for (i, sql) in MIGRATIONS
                .iter()
                .enumerate()
                .take(upto)
                .skip(version.max(0) as usize)
            {
                tx.batch_execute(sql).await?;
                tx.execute(
                    "UPDATE mcpprobe_schema SET version = $1",
                    &[&(i as i64 + 1)],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(version)
        })?;
        if found > known {
            return Err(StoreError::NewerSchema {
                path: self.label.clone(),
                found,
                known,
            });
        }
        Ok(())
    }

    /// The schema version the database is at.
    #[doc(hidden)]
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let row = client
                .query_one("SELECT max(version) FROM mcpprobe_schema", &[])
                .await?;
            Ok(get::<Option<i64>>(&row, 0)?.unwrap_or(0))
        })
    }

    /// Runs `sql` as it is (the tests of migrations set a database up with it).
    #[doc(hidden)]
    pub fn execute_raw(&self, sql: &str) -> Result<(), StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            client.batch_execute(sql).await?;
            Ok(())
        })
    }

    /// Runs one call on the store's runtime, blocking this thread (never an async worker:
    /// callers go through `spawn_blocking`), its error named without the URL.
    fn call<T>(&self, f: impl Future<Output = Result<T, PgError>>) -> Result<T, StoreError> {
        let Some(rt) = self.runtime.as_ref() else {
            return Err(self.error("the store was shut down".into()));
        };
        rt.block_on(f).map_err(|e| self.error(e.to_string()))
    }

    fn error(&self, mut message: String) -> StoreError {
        for s in self.secrets.iter().filter(|s| !s.is_empty()) {
            message = message.replace(s.as_str(), "[REDACTED]");
        }
        StoreError::Database {
            path: self.label.clone(),
            message,
        }
    }

    /// Accepts the state run `id` (or the latest run with a complete inventory) observed, in
    /// one transaction, recording which run it came from.
    fn accept_observed(
        &self,
        target: &str,
        id: Option<i64>,
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        enum Accepted {
            Id(i64),
            UnknownTarget,
            Nothing,
        }
        let accepted = self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            if tx
                .query_opt("SELECT 1 FROM targets WHERE name = $1", &[&target])
                .await?
                .is_none()
            {
                return Ok(Accepted::UnknownTarget);
            }
            let observed = tx
                .query_opt(
                    "SELECT runs.id, d.observed_json FROM runs JOIN run_documents d ON d.run = runs.id
                     WHERE runs.target = $1 AND ($2::BIGINT IS NULL OR runs.id = $2)
                         AND d.observed_json IS NOT NULL
                     ORDER BY runs.id DESC LIMIT 1",
                    &[&target, &id],
                )
                .await?;
            let Some(row) = observed else {
                return Ok(Accepted::Nothing);
            };
            let (run, json): (i64, String) = (get(&row, 0)?, get(&row, 1)?);
            let row = tx
                .query_one(
                    "INSERT INTO baselines (target, json, accepted_ms, source_run)
                     VALUES ($1, $2, $3, $4) RETURNING id",
                    &[&target, &json, &now_ms, &run],
                )
                .await?;
            let baseline: i64 = get(&row, 0)?;
            tx.commit().await?;
            Ok(Accepted::Id(baseline))
        })?;
        match (accepted, id) {
            (Accepted::Id(b), _) => Ok(b),
            (Accepted::UnknownTarget, None) => Err(StoreError::UnknownTarget(target.to_string())),
            (Accepted::UnknownTarget, Some(id)) | (Accepted::Nothing, Some(id)) => {
                Err(StoreError::NoSuchRunToAccept(target.to_string(), id))
            }
            (Accepted::Nothing, None) => Err(StoreError::NothingToAccept(target.to_string())),
        }
    }
}

impl Store for PgStore {
    fn sync_targets(&self, targets: &[TargetRow], now_ms: i64) -> Result<(), StoreError> {
        self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TARGETS_LOCK])
                .await?;
            // Only the file's own targets leave with it; imported ones stay listed.
            tx.execute("UPDATE targets SET active = 0 WHERE source = 'config'", &[])
                .await?;
            let upsert = tx
                .prepare(
                    "INSERT INTO targets (name, url, every_ms, active, added_ms, source)
                     VALUES ($1, $2, $3, 1, $4, 'config')
                     ON CONFLICT (name) DO UPDATE SET url = excluded.url,
                         every_ms = excluded.every_ms, active = 1, source = 'config', spec = NULL",
                )
                .await?;
            for t in targets {
                tx.execute(&upsert, &[&t.name, &t.url, &t.every_ms, &now_ms])
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn import_targets(
        &self,
        targets: &[ImportedTarget],
        now_ms: i64,
    ) -> Result<ImportSummary, StoreError> {
        self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            // Imports and starts serialise on the targets (the same lock as sync_targets).
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TARGETS_LOCK])
                .await?;
            let find = tx
                .prepare("SELECT source, active, spec FROM targets WHERE name = $1")
                .await?;
            let insert = tx
                .prepare(
                    "INSERT INTO targets (name, url, every_ms, active, added_ms, source, spec)
                     VALUES ($1, $2, $3, 1, $4, 'import', $5)",
                )
                .await?;
            let update = tx
                .prepare(
                    "UPDATE targets SET url = $2, every_ms = $3, active = 1, source = 'import',
                         spec = $4 WHERE name = $1",
                )
                .await?;
            let mut summary = ImportSummary::default();
            for t in targets {
                let found = tx.query_opt(&find, &[&t.name]).await?;
                let found: Option<(String, i64, Option<String>)> = match found {
                    Some(r) => Some((get(&r, 0)?, get(&r, 1)?, get(&r, 2)?)),
                    None => None,
                };
                match found {
                    None => {
                        tx.execute(&insert, &[&t.name, &t.url, &t.every_ms, &now_ms, &t.spec])
                            .await?;
                        summary.added += 1;
                        continue;
                    }
                    Some((source, 1, _)) if source == "config" => {
                        summary.shadowed += 1;
                        continue;
                    }
                    Some((_, 1, spec)) if spec.as_deref() == Some(t.spec.as_str()) => {
                        summary.unchanged += 1;
                        continue;
                    }
                    Some((_, 1, _)) => summary.updated += 1,
                    // Listed no more (removed, or it left the file): back, with its history.
                    Some(_) => summary.added += 1,
                }
                tx.execute(&update, &[&t.name, &t.url, &t.every_ms, &t.spec])
                    .await?;
            }
            tx.commit().await?;
            Ok(summary)
        })
    }

    fn remove_target(&self, name: &str) -> Result<(), StoreError> {
        enum Removed {
            Done,
            Unknown,
            Configured,
        }
        let removed = self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            let found = tx
                .query_opt(
                    "SELECT source, active FROM targets WHERE name = $1 FOR UPDATE",
                    &[&name],
                )
                .await?;
            let found: Option<(String, i64)> = match found {
                Some(r) => Some((get(&r, 0)?, get(&r, 1)?)),
                None => None,
            };
            let removed = match found {
                Some((_, 0)) | None => Removed::Unknown,
                Some((source, _)) if source == "config" => Removed::Configured,
                Some(_) => {
                    tx.execute("UPDATE targets SET active = 0 WHERE name = $1", &[&name])
                        .await?;
                    Removed::Done
                }
            };
            tx.commit().await?;
            Ok(removed)
        })?;
        match removed {
            Removed::Done => Ok(()),
            Removed::Unknown => Err(StoreError::UnknownTarget(name.to_string())),
            Removed::Configured => Err(StoreError::ConfiguredTarget(name.to_string())),
        }
    }

    fn imported_targets(&self) -> Result<Vec<ImportedTarget>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query(
                    "SELECT name, url, every_ms, spec FROM targets
                     WHERE source = 'import' AND active = 1 AND spec IS NOT NULL ORDER BY name",
                    &[],
                )
                .await?;
            rows(&found, |r| {
                Ok(ImportedTarget {
                    name: get(r, 0)?,
                    url: get(r, 1)?,
                    every_ms: get(r, 2)?,
                    spec: get(r, 3)?,
                })
            })
        })
    }

    fn targets(&self) -> Result<Vec<TargetRow>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query(
                    "SELECT name, url, every_ms FROM targets WHERE active = 1 ORDER BY name",
                    &[],
                )
                .await?;
            rows(&found, |r| {
                Ok(TargetRow {
                    name: get(r, 0)?,
                    url: get(r, 1)?,
                    every_ms: get(r, 2)?,
                })
            })
        })
    }

    fn claim_for(
        &self,
        target: &str,
        slot: i64,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Claimed, StoreError> {
        let claimed = self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            // The target's row is the claim's lock: a worker claiming it right now makes this
            // claim Busy at once, not a wait.
            let locked = tx
                .query_opt(
                    "SELECT name FROM targets WHERE name = $1 FOR UPDATE SKIP LOCKED",
                    &[&target],
                )
                .await?;
            if locked.is_none() {
                let known = tx
                    .query_opt("SELECT 1 FROM targets WHERE name = $1", &[&target])
                    .await?;
                return Ok(known.map(|_| Claimed::Busy));
            }
            // A lease that lapsed: its worker died. The run is interrupted, its slot released.
            let lapsed = tx
                .execute(
                    "UPDATE runs SET status = 'interrupted', finished_ms = $2,
                         reason = 'its lease lapsed (the daemon running it stopped)'
                     WHERE target = $1 AND status = 'running' AND lease_until < $2",
                    &[&target, &now_ms],
                )
                .await?;
            if lapsed > 0 {
                count(&tx, "runs.interrupted", i64_of(lapsed)).await?;
            }
            let busy = tx
                .query_opt(
                    "SELECT 1 FROM runs WHERE target = $1 AND status = 'running' LIMIT 1",
                    &[&target],
                )
                .await?;
            if busy.is_some() {
                tx.commit().await?;
                return Ok(Some(Claimed::Busy));
            }
            let inserted = tx
                .query_opt(
                    "INSERT INTO runs (target, slot, status, started_ms, lease_until, lease_epoch, worker)
                     VALUES ($1, $2, 'running', $3, $4, 1, $5)
                     ON CONFLICT (target, slot) WHERE status <> 'interrupted' DO NOTHING
                     RETURNING id",
                    &[&target, &slot, &now_ms, &now_ms.saturating_add(lease_ms), &worker],
                )
                .await?;
            let claimed = match inserted {
                Some(row) => {
                    let run_id: i64 = get(&row, 0)?;
                    tx.execute(
                        "UPDATE targets SET latest_run = $2 WHERE name = $1",
                        &[&target, &run_id],
                    )
                    .await?;
                    Claimed::Run(Claim {
                        run_id,
                        target: target.to_string(),
                        slot,
                        epoch: 1,
                    })
                }
                None => Claimed::Done,
            };
            tx.commit().await?;
            Ok(Some(claimed))
        })?;
        claimed.ok_or_else(|| StoreError::UnknownTarget(target.to_string()))
    }

    fn renew(&self, claim: &mut Claim, now_ms: i64, lease_ms: i64) -> Result<bool, StoreError> {
        let n = self.call(async {
            let client = self.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE runs SET lease_until = $1, lease_epoch = lease_epoch + 1
                     WHERE id = $2 AND status = 'running' AND lease_epoch = $3",
                    &[
                        &now_ms.saturating_add(lease_ms),
                        &claim.run_id,
                        &claim.epoch,
                    ],
                )
                .await?)
        })?;
        if n == 1 {
            claim.epoch += 1;
        }
        Ok(n == 1)
    }

    fn finish(&self, claim: &Claim, run: &Finished, now_ms: i64) -> Result<bool, StoreError> {
        self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            let held = tx
                .execute(
                    "UPDATE runs SET status = $2, finished_ms = $3, lease_until = NULL, exit_code = $4,
                         critical = $5, high = $6, medium = $7, low = $8, info = $9,
                         tool_list_sha256 = $10, requests = $11, reason = $12,
                         compared_with = $13, refusal = $14, duration_ms = $15
                     WHERE id = $1 AND status = 'running' AND lease_epoch = $16",
                    &[
                        &claim.run_id,
                        &run.status.as_str(),
                        &now_ms,
                        &run.exit_code,
                        &i64::from(run.counts.critical),
                        &i64::from(run.counts.high),
                        &i64::from(run.counts.medium),
                        &i64::from(run.counts.low),
                        &i64::from(run.counts.info),
                        &run.tool_list_sha256,
                        &i64_of(run.requests),
                        &run.reason,
                        &run.compared_with,
                        &run.refusal,
                        &run.duration_ms,
                        &claim.epoch,
                    ],
                )
                .await?
                == 1;
            // A run that lost its claim records nothing (its proof row neither).
            if !held {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO run_documents (run, report_json, observed_json) VALUES ($1, $2, $3)",
                &[&claim.run_id, &run.report_json, &run.observed_json],
            )
            .await?;
            count(&tx, &format!("runs.{}", run.status.as_str()), 1).await?;
            count(&tx, "requests", i64_of(run.requests)).await?;
            if run.status == RunStatus::Refused {
                count(
                    &tx,
                    &format!("refusals.{}", run.refusal.unwrap_or("unknown")),
                    1,
                )
                .await?;
            }
            if let Some(p) = &run.proof {
                tx.execute(
                    "INSERT INTO proofs (method, host, verified_ms, expires_ms)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    &[&p.method, &p.host, &p.verified_ms, &p.expires_ms],
                )
                .await?;
                let row = tx
                    .query_one(
                        "SELECT id FROM proofs WHERE method = $1 AND host = $2
                             AND verified_ms IS NOT DISTINCT FROM $3
                             AND expires_ms IS NOT DISTINCT FROM $4",
                        &[&p.method, &p.host, &p.verified_ms, &p.expires_ms],
                    )
                    .await?;
                let proof: i64 = get(&row, 0)?;
                tx.execute(
                    "INSERT INTO run_proofs (run, proof) VALUES ($1, $2)",
                    &[&claim.run_id, &proof],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    fn interrupt(&self, claim: &Claim, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            let n = tx
                .execute(
                    "UPDATE runs SET status = 'interrupted', finished_ms = $2, lease_until = NULL, reason = $3
                     WHERE id = $1 AND status = 'running' AND lease_epoch = $4",
                    &[&claim.run_id, &now_ms, &reason, &claim.epoch],
                )
                .await?;
            if n > 0 {
                count(&tx, "runs.interrupted", 1).await?;
            }
            tx.commit().await?;
            Ok(n > 0)
        })
    }

    fn runs(&self, target: &str, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.target = $1
                         ORDER BY runs.id DESC LIMIT $2"
                    ),
                    &[&target, &limit],
                )
                .await?;
            rows(&found, run_row)
        })
    }

    fn run(&self, target: &str, id: i64) -> Result<Option<RunSummary>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query_opt(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.target = $1 AND runs.id = $2"
                    ),
                    &[&target, &id],
                )
                .await?;
            found.as_ref().map(run_row).transpose()
        })
    }

    fn held_slots(&self) -> Result<Vec<(String, i64)>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query(
                    "SELECT target, max(slot) FROM runs
                     WHERE status NOT IN ('interrupted', 'running') GROUP BY target",
                    &[],
                )
                .await?;
            rows(&found, |r| Ok((get(r, 0)?, get(r, 1)?)))
        })
    }

    fn latest_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.id IN (
                             SELECT latest_run FROM targets WHERE active = 1 AND latest_run IS NOT NULL)"
                    ),
                    &[],
                )
                .await?;
            rows(&found, run_row)
        })
    }

    fn run_documents(&self, target: &str, id: i64) -> Result<Option<RunDocuments>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query_opt(
                    "SELECT d.report_json, d.observed_json, runs.compared_with
                     FROM runs JOIN run_documents d ON d.run = runs.id
                     WHERE runs.target = $1 AND runs.id = $2",
                    &[&target, &id],
                )
                .await?;
            found
                .map(|r| {
                    Ok(RunDocuments {
                        report_json: get(&r, 0)?,
                        observed_json: get(&r, 1)?,
                        compared_with: get(&r, 2)?,
                    })
                })
                .transpose()
        })
    }

    fn latest_report(&self, target: &str) -> Result<Option<String>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query_opt(
                    "SELECT d.report_json FROM runs JOIN run_documents d ON d.run = runs.id
                     WHERE runs.target = $1 ORDER BY runs.id DESC LIMIT 1",
                    &[&target],
                )
                .await?;
            found.map(|r| get(&r, 0)).transpose()
        })
    }

    fn last_clean_and_first(&self, target: &str) -> Result<(Option<i64>, Option<i64>), StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let clean = client
                .query_one(
                    "SELECT max(started_ms) FROM runs WHERE target = $1 AND status = 'complete'
                         AND critical = 0 AND high = 0 AND medium = 0 AND low = 0",
                    &[&target],
                )
                .await?;
            let first = client
                .query_one(
                    "SELECT min(started_ms) FROM runs WHERE target = $1",
                    &[&target],
                )
                .await?;
            Ok((get(&clean, 0)?, get(&first, 0)?))
        })
    }

    fn accepted_baseline(&self, target: &str) -> Result<Option<StoredBaseline>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query_opt(
                    "SELECT id, json, accepted_ms FROM baselines WHERE target = $1
                     ORDER BY id DESC LIMIT 1",
                    &[&target],
                )
                .await?;
            found.as_ref().map(baseline_row).transpose()
        })
    }

    fn baseline(&self, id: i64) -> Result<Option<StoredBaseline>, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let found = client
                .query_opt(
                    "SELECT id, json, accepted_ms FROM baselines WHERE id = $1",
                    &[&id],
                )
                .await?;
            found.as_ref().map(baseline_row).transpose()
        })
    }

    fn accept_baseline(&self, target: &str, json: &str, now_ms: i64) -> Result<i64, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let row = client
                .query_one(
                    "INSERT INTO baselines (target, json, accepted_ms) VALUES ($1, $2, $3) RETURNING id",
                    &[&target, &json, &now_ms],
                )
                .await?;
            get(&row, 0)
        })
    }

    fn accept_latest(&self, target: &str, now_ms: i64) -> Result<i64, StoreError> {
        self.accept_observed(target, None, now_ms)
    }

    fn accept_run(&self, target: &str, id: i64, now_ms: i64) -> Result<i64, StoreError> {
        self.accept_observed(target, Some(id), now_ms)
    }

    fn totals(&self) -> Result<Totals, StoreError> {
        self.call(async {
            let client = self.pool.get().await?;
            let mut t = Totals::default();
            let counters = client
                .query("SELECT name, value FROM counters ORDER BY name", &[])
                .await?;
            for row in &counters {
                let (name, value): (String, i64) = (get(row, 0)?, get(row, 1)?);
                let value = value.max(0).unsigned_abs();
                if let Some(status) = name.strip_prefix("runs.") {
                    if let Some(s) = RunStatus::parse(status) {
                        t.runs_by_status.push((s, value));
                    }
                } else if let Some(class) = name.strip_prefix("refusals.") {
                    t.refusals.push((class.to_string(), value));
                } else if name == "requests" {
                    t.requests = value;
                }
            }
            let row = client
                .query_one("SELECT count(*) FROM targets WHERE active = 1", &[])
                .await?;
            t.targets = get::<i64>(&row, 0)?.max(0).unsigned_abs();
            let latest = client
                .query(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.id IN (
                             SELECT CASE WHEN r.status <> 'running' THEN r.id ELSE
                                 (SELECT max(p.id) FROM runs p WHERE p.target = t.name AND p.status <> 'running')
                             END
                             FROM targets t JOIN runs r ON r.id = t.latest_run WHERE t.active = 1)
                         ORDER BY runs.target"
                    ),
                    &[],
                )
                .await?;
            t.latest = rows(&latest, run_row)?;
            for r in &t.latest {
                t.latest_findings.critical += r.counts.critical;
                t.latest_findings.high += r.counts.high;
                t.latest_findings.medium += r.counts.medium;
                t.latest_findings.low += r.counts.low;
                t.latest_findings.info += r.counts.info;
            }
            Ok(t)
        })
    }

    fn prune(&self, keep: &Retention, now_ms: i64) -> Result<u64, StoreError> {
        let cutoff = now_ms.saturating_sub(keep.days.saturating_mul(86_400_000));
        let keep_runs = i64_of(keep.runs);
        self.call(async {
            let mut client = self.pool.get().await?;
            let tx = client.transaction().await?;
            // As the SQLite store: never a running run, a target's latest, or the run its
            // accepted baseline came from.
            let doomed = tx
                .query(
                    "SELECT id FROM (
                         SELECT id, status, started_ms,
                                row_number() OVER (PARTITION BY target ORDER BY id DESC) AS n
                         FROM runs) ranked
                     WHERE status <> 'running' AND (n > $1 OR started_ms < $2)
                       AND id NOT IN (SELECT latest_run FROM targets WHERE latest_run IS NOT NULL)
                       AND id NOT IN (
                           SELECT b.source_run FROM baselines b
                           WHERE b.source_run IS NOT NULL
                             AND b.id = (SELECT max(x.id) FROM baselines x WHERE x.target = b.target))",
                    &[&keep_runs, &cutoff],
                )
                .await?;
            let ids = rows(&doomed, |r| get::<i64>(r, 0))?;
            tx.execute("DELETE FROM run_proofs WHERE run = ANY($1)", &[&ids])
                .await?;
            let n = tx
                .execute("DELETE FROM runs WHERE id = ANY($1)", &[&ids])
                .await?;
            tx.execute(
                "DELETE FROM baselines WHERE
                     id <> (SELECT max(x.id) FROM baselines x WHERE x.target = baselines.target)
                     AND id NOT IN (SELECT compared_with FROM runs WHERE compared_with IS NOT NULL)",
                &[],
            )
            .await?;
            tx.commit().await?;
            Ok(n)
        })
    }

    fn lease_host(
        &self,
        host: &str,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<HostLease>, StoreError> {
        let epoch = self.call(async {
            let client = self.pool.get().await?;
            let row = client
                .query_opt(
                    "INSERT INTO host_leases (host, worker, lease_until, epoch) VALUES ($1, $2, $3, 1)
                     ON CONFLICT (host) DO UPDATE SET worker = excluded.worker,
                         lease_until = excluded.lease_until, epoch = host_leases.epoch + 1
                     WHERE host_leases.lease_until < $4
                     RETURNING epoch",
                    &[&host, &worker, &now_ms.saturating_add(lease_ms), &now_ms],
                )
                .await?;
            row.map(|r| get::<i64>(&r, 0)).transpose()
        })?;
        Ok(epoch.map(|epoch| HostLease {
            host: host.to_string(),
            worker: worker.to_string(),
            epoch,
        }))
    }

    fn renew_host(
        &self,
        lease: &mut HostLease,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        let n = self.call(async {
            let client = self.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE host_leases SET lease_until = $1, epoch = epoch + 1
                     WHERE host = $2 AND worker = $3 AND epoch = $4",
                    &[
                        &now_ms.saturating_add(lease_ms),
                        &lease.host,
                        &lease.worker,
                        &lease.epoch,
                    ],
                )
                .await?)
        })?;
        if n == 1 {
            lease.epoch += 1;
        }
        Ok(n == 1)
    }

    fn release_host(&self, lease: &HostLease, now_ms: i64) -> Result<bool, StoreError> {
        let quiet = now_ms.saturating_add(super::store::HOST_QUIET_MS);
        self.call(async {
            let client = self.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE host_leases SET lease_until = $4, epoch = epoch + 1
                     WHERE host = $1 AND worker = $2 AND epoch = $3",
                    &[&lease.host, &lease.worker, &lease.epoch, &quiet],
                )
                .await?
                == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_url_is_named_without_its_secret() {
        let url = SecretString::from("postgres://u:hunter2-pw@[::1:5432/db?sslmode=bogus");
        let Err(e) = PgStore::connect(&url, "MCPPROBE_DATABASE_URL") else {
            panic!("not a URL")
        };
        let text = e.to_string();
        assert!(text.contains("MCPPROBE_DATABASE_URL"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn an_unreachable_database_is_an_error_naming_the_variable_not_the_url() {
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let url = SecretString::from("postgres://mcpprobe:hunter2-pw@127.0.0.1:1/fleet");
        let Err(e) = PgStore::connect(&url, "MCPPROBE_DATABASE_URL") else {
            panic!("nothing listens there")
        };
        let text = e.to_string();
        assert!(
            text.starts_with("the state database PostgreSQL (MCPPROBE_DATABASE_URL)"),
            "{text}"
        );
        assert!(
            !text.contains("hunter2") && !text.contains("postgres://"),
            "{text}"
        );
    }
}
