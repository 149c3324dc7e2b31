//! The embedded store: one SQLite file in the state folder (rusqlite, bundled), WAL mode,
//! versioned plain-SQL migrations (`migrations/NNN_*.sql`, applied in order by
//! `rusqlite_migration`, the version kept in `PRAGMA user_version`: the number applied). Two
//! connections, each behind its mutex: the one writer (claims, renewals, finishes, accepts,
//! retention) and a read-only one beside it for the status API and the page (WAL: neither waits
//! for the other). Callers on async threads go through `spawn_blocking`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension as _, params};
use rusqlite_migration::{M, MigrationDefinitionError, Migrations};

use super::store::{
    Claim, Claimed, Counts, Finished, HostLease, ImportSummary, ImportedTarget, ProofRecord,
    Retention, RunDocuments, RunStatus, RunSummary, Store, StoreError, StoredBaseline, TargetRow,
    Totals,
};

/// The migrations, in order; the schema version is their count.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/001_init.sql"),
    include_str!("migrations/002_latest_run.sql"),
    include_str!("migrations/003_run_proofs.sql"),
    include_str!("migrations/004_documents_retention_counters.sql"),
    include_str!("migrations/005_host_leases.sql"),
    include_str!("migrations/006_imported_targets.sql"),
];

pub struct SqliteStore {
    /// The one writer (claims, renewals, finishes, accepts, retention).
    conn: Mutex<Connection>,
    /// Reads beside it (WAL: a reader never waits for the writer, nor the writer for it), so
    /// the status API and the page do not queue behind the scheduler's writes; a pool of
    /// [`READERS`], so that one slow read (a long run list) does not hold up the others.
    readers: Vec<Mutex<Connection>>,
    /// Where a read waits when every reader is busy (round robin).
    next_reader: std::sync::atomic::AtomicUsize,
    path: String,
}

/// Read connections beside the writer.
const READERS: usize = 4;

/// Adds `by` to counter `name` (what `/metrics` reports; see migration 004).
fn count(tx: &Connection, name: &str, by: i64) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO counters (name, value) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
        params![name, by],
    )
    .map(|_| ())
}

/// A run's summary columns, from [`RUNS`].
const RUN_COLUMNS: &str = "runs.id, runs.target, runs.slot, runs.started_ms, runs.finished_ms, \
     runs.status, runs.exit_code, runs.critical, runs.high, runs.medium, runs.low, runs.info, \
     runs.tool_list_sha256, runs.requests, runs.reason, \
     proofs.method, proofs.host, proofs.verified_ms, proofs.expires_ms, runs.worker";
/// The runs with the proof each relied on.
const RUNS: &str = "runs LEFT JOIN run_proofs ON run_proofs.run = runs.id \
     LEFT JOIN proofs ON proofs.id = run_proofs.proof";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    let status: String = r.get(5)?;
    Ok(RunSummary {
        id: r.get(0)?,
        target: r.get(1)?,
        slot: r.get(2)?,
        started_ms: r.get(3)?,
        finished_ms: r.get(4)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted),
        exit_code: r.get(6)?,
        counts: Counts {
            critical: r.get(7)?,
            high: r.get(8)?,
            medium: r.get(9)?,
            low: r.get(10)?,
            info: r.get(11)?,
        },
        tool_list_sha256: r.get(12)?,
        requests: r.get::<_, i64>(13)?.max(0).unsigned_abs(),
        reason: r.get(14)?,
        proof: match r.get::<_, Option<String>>(15)? {
            Some(method) => Some(ProofRecord {
                method,
                host: r.get(16)?,
                verified_ms: r.get(17)?,
                expires_ms: r.get(18)?,
            }),
            None => None,
        },
        worker: r.get(19)?,
    })
}

fn baseline_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredBaseline> {
    Ok(StoredBaseline {
        id: r.get(0)?,
        json: r.get(1)?,
        accepted_ms: r.get(2)?,
    })
}

impl SqliteStore {
    /// Opens (creating) the database at `path` and brings its schema up to date. A database
    /// from a newer mcpprobe is refused, never downgraded.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let name = path.display().to_string();
        let err = |e: rusqlite::Error| StoreError::Database {
            path: name.clone(),
            message: e.to_string(),
        };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        // The pending migrations in one transaction; a version above ours changes nothing.
        let migrations = Migrations::new(MIGRATIONS.iter().copied().map(M::up).collect());
        match migrations.to_latest(&mut conn) {
            Ok(()) => {}
            Err(rusqlite_migration::Error::MigrationDefinition(
                MigrationDefinitionError::DatabaseTooFarAhead,
            )) => {
                let found: i64 = conn
                    .query_row("PRAGMA user_version", [], |r| r.get(0))
                    .map_err(err)?;
                return Err(StoreError::NewerSchema {
                    path: name,
                    found,
                    known: MIGRATIONS.len() as i64,
                });
            }
            Err(e) => {
                return Err(StoreError::Database {
                    path: name,
                    message: e.to_string(),
                });
            }
        }
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open_with_flags(
                    path,
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(err)?;
                reader
                    .busy_timeout(std::time::Duration::from_secs(5))
                    .map_err(err)?;
                Ok(Mutex::new(reader))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            readers,
            next_reader: std::sync::atomic::AtomicUsize::new(0),
            path: name,
        })
    }

    /// Accepts the state run `id` (or, without one, the latest run with a complete inventory)
    /// observed, in one transaction, recording which run it came from.
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
        let accepted = self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let known: i64 = tx.query_row(
                "SELECT count(*) FROM targets WHERE name = ?1",
                params![target],
                |r| r.get(0),
            )?;
            if known == 0 {
                return Ok(Accepted::UnknownTarget);
            }
            let observed: Option<(i64, String)> = tx
                .query_row(
                    "SELECT runs.id, d.observed_json FROM runs JOIN run_documents d ON d.run = runs.id
                     WHERE runs.target = ?1 AND (?2 IS NULL OR runs.id = ?2)
                         AND d.observed_json IS NOT NULL
                     ORDER BY runs.id DESC LIMIT 1",
                    params![target, id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((run, json)) = observed else {
                return Ok(Accepted::Nothing);
            };
            tx.execute(
                "INSERT INTO baselines (target, json, accepted_ms, source_run) VALUES (?1, ?2, ?3, ?4)",
                params![target, json, now_ms, run],
            )?;
            let baseline = tx.last_insert_rowid();
            tx.commit()?;
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

    /// The database file in a state folder.
    pub fn path_in(state_dir: &Path) -> PathBuf {
        state_dir.join("daemon.sqlite3")
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.on(&self.conn, f)
    }

    /// [`SqliteStore::with`] on a read connection, the first free one (else the next in
    /// turn, waiting for it): for statements that only read.
    fn read<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        for reader in &self.readers {
            // Busy or poisoned: the next one (a poisoned one is said by `on` below when the
            // turn comes to it).
            if let Ok(mut conn) = reader.try_lock() {
                return self.call(&mut conn, f);
            }
        }
        let turn = self
            .next_reader
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % self.readers.len().max(1);
        match self.readers.get(turn) {
            Some(reader) => self.on(reader, f),
            None => self.with(f),
        }
    }

    fn on<T>(
        &self,
        conn: &Mutex<Connection>,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = conn.lock().map_err(|_| StoreError::Database {
            path: self.path.clone(),
            message: "a previous operation panicked while holding the connection".into(),
        })?;
        self.call(&mut conn, f)
    }

    fn call<T>(
        &self,
        conn: &mut Connection,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        f(conn).map_err(|e| StoreError::Database {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }
}

impl Store for SqliteStore {
    fn sync_targets(&self, targets: &[TargetRow], now_ms: i64) -> Result<(), StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            // Only the file's own targets leave with it; imported ones stay listed.
            tx.execute("UPDATE targets SET active = 0 WHERE source = 'config'", [])?;
            {
                let mut upsert = tx.prepare(
                    "INSERT INTO targets (name, url, every_ms, active, added_ms, source)
                     VALUES (?1, ?2, ?3, 1, ?4, 'config')
                     ON CONFLICT(name) DO UPDATE SET url = excluded.url,
                         every_ms = excluded.every_ms, active = 1, source = 'config', spec = NULL",
                )?;
                for t in targets {
                    upsert.execute(params![t.name, t.url, t.every_ms, now_ms])?;
                }
            }
            tx.commit()
        })
    }

    fn import_targets(
        &self,
        targets: &[ImportedTarget],
        now_ms: i64,
    ) -> Result<ImportSummary, StoreError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut summary = ImportSummary::default();
            {
                let mut find =
                    tx.prepare("SELECT source, active, spec FROM targets WHERE name = ?1")?;
                let mut insert = tx.prepare(
                    "INSERT INTO targets (name, url, every_ms, active, added_ms, source, spec)
                     VALUES (?1, ?2, ?3, 1, ?4, 'import', ?5)",
                )?;
                let mut update = tx.prepare(
                    "UPDATE targets SET url = ?2, every_ms = ?3, active = 1, source = 'import',
                         spec = ?4 WHERE name = ?1",
                )?;
                for t in targets {
                    let found: Option<(String, i64, Option<String>)> = find
                        .query_row(params![t.name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                        .optional()?;
                    match found {
                        None => {
                            insert.execute(params![t.name, t.url, t.every_ms, now_ms, t.spec])?;
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
                    update.execute(params![t.name, t.url, t.every_ms, t.spec])?;
                }
            }
            tx.commit()?;
            Ok(summary)
        })
    }

    fn remove_target(&self, name: &str) -> Result<(), StoreError> {
        enum Removed {
            Done,
            Unknown,
            Configured,
        }
        let removed = self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let found: Option<(String, i64)> = tx
                .query_row(
                    "SELECT source, active FROM targets WHERE name = ?1",
                    params![name],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let removed = match found {
                Some((_, 0)) | None => Removed::Unknown,
                Some((source, _)) if source == "config" => Removed::Configured,
                Some(_) => {
                    tx.execute(
                        "UPDATE targets SET active = 0 WHERE name = ?1",
                        params![name],
                    )?;
                    Removed::Done
                }
            };
            tx.commit()?;
            Ok(removed)
        })?;
        match removed {
            Removed::Done => Ok(()),
            Removed::Unknown => Err(StoreError::UnknownTarget(name.to_string())),
            Removed::Configured => Err(StoreError::ConfiguredTarget(name.to_string())),
        }
    }

    fn imported_targets(&self) -> Result<Vec<ImportedTarget>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT name, url, every_ms, spec FROM targets
                 WHERE source = 'import' AND active = 1 AND spec IS NOT NULL ORDER BY name",
            )?;
            st.query_map([], |r| {
                Ok(ImportedTarget {
                    name: r.get(0)?,
                    url: r.get(1)?,
                    every_ms: r.get(2)?,
                    spec: r.get(3)?,
                })
            })?
            .collect()
        })
    }

    fn targets(&self) -> Result<Vec<TargetRow>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT name, url, every_ms FROM targets WHERE active = 1 ORDER BY name",
            )?;
            st.query_map([], |r| {
                Ok(TargetRow {
                    name: r.get(0)?,
                    url: r.get(1)?,
                    every_ms: r.get(2)?,
                })
            })?
            .collect()
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
        let claimed = self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let known: i64 = tx.query_row(
                "SELECT count(*) FROM targets WHERE name = ?1",
                params![target],
                |r| r.get(0),
            )?;
            if known == 0 {
                return Ok(None);
            }
            // A lease that lapsed: its daemon died. The run is interrupted, its slot released.
            let lapsed = tx.execute(
                "UPDATE runs SET status = 'interrupted', finished_ms = ?2,
                     reason = 'its lease lapsed (the daemon running it stopped)'
                 WHERE target = ?1 AND status = 'running' AND lease_until < ?2",
                params![target, now_ms],
            )?;
            if lapsed > 0 {
                count(&tx, "runs.interrupted", i64::try_from(lapsed).unwrap_or(i64::MAX))?;
            }
            let busy: i64 = tx.query_row(
                "SELECT count(*) FROM runs WHERE target = ?1 AND status = 'running'",
                params![target],
                |r| r.get(0),
            )?;
            if busy > 0 {
                tx.commit()?;
                return Ok(Some(Claimed::Busy));
            }
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO runs (target, slot, status, started_ms, lease_until, lease_epoch, worker)
                 VALUES (?1, ?2, 'running', ?3, ?4, 1, ?5)",
                params![target, slot, now_ms, now_ms + lease_ms, worker],
            )?;
            let claim = (inserted == 1).then(|| Claim {
                run_id: tx.last_insert_rowid(),
                target: target.to_string(),
                slot,
                epoch: 1,
            });
            if let Some(c) = &claim {
                tx.execute(
                    "UPDATE targets SET latest_run = ?2 WHERE name = ?1",
                    params![target, c.run_id],
                )?;
            }
            tx.commit()?;
            Ok(Some(claim.map_or(Claimed::Done, Claimed::Run)))
        })?;
        claimed.ok_or_else(|| StoreError::UnknownTarget(target.to_string()))
    }

    fn renew(&self, claim: &mut Claim, now_ms: i64, lease_ms: i64) -> Result<bool, StoreError> {
        let n = self.with(|c| {
            c.execute(
                "UPDATE runs SET lease_until = ?1, lease_epoch = lease_epoch + 1
                 WHERE id = ?2 AND status = 'running' AND lease_epoch = ?3",
                params![now_ms + lease_ms, claim.run_id, claim.epoch],
            )
        })?;
        if n == 1 {
            claim.epoch += 1;
        }
        Ok(n == 1)
    }

    fn finish(&self, claim: &Claim, run: &Finished, now_ms: i64) -> Result<bool, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            // The proof the run relied on: one row per proof, shared by its runs.
            let proof: Option<i64> = match &run.proof {
                Some(p) => {
                    tx.execute(
                        "INSERT INTO proofs (method, host, verified_ms, expires_ms)
                         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                        params![p.method, p.host, p.verified_ms, p.expires_ms],
                    )?;
                    Some(tx.query_row(
                        "SELECT id FROM proofs WHERE method = ?1 AND host = ?2
                             AND verified_ms IS ?3 AND expires_ms IS ?4",
                        params![p.method, p.host, p.verified_ms, p.expires_ms],
                        |r| r.get(0),
                    )?)
                }
                None => None,
            };
            let held = tx.execute(
                "UPDATE runs SET status = ?2, finished_ms = ?3, lease_until = NULL, exit_code = ?4,
                     critical = ?5, high = ?6, medium = ?7, low = ?8, info = ?9,
                     tool_list_sha256 = ?10, requests = ?11, reason = ?12,
                     compared_with = ?13, refusal = ?14, duration_ms = ?15
                 WHERE id = ?1 AND status = 'running' AND lease_epoch = ?16",
                params![
                    claim.run_id,
                    run.status.as_str(),
                    now_ms,
                    run.exit_code,
                    run.counts.critical,
                    run.counts.high,
                    run.counts.medium,
                    run.counts.low,
                    run.counts.info,
                    run.tool_list_sha256,
                    i64::try_from(run.requests).unwrap_or(i64::MAX),
                    run.reason,
                    run.compared_with,
                    run.refusal,
                    run.duration_ms,
                    claim.epoch,
                ],
            )? == 1;
            // A run that lost its claim records nothing (its proof row neither).
            if held {
                tx.execute(
                    "INSERT INTO run_documents (run, report_json, observed_json) VALUES (?1, ?2, ?3)",
                    params![claim.run_id, run.report_json, run.observed_json],
                )?;
                count(&tx, &format!("runs.{}", run.status.as_str()), 1)?;
                count(&tx, "requests", i64::try_from(run.requests).unwrap_or(i64::MAX))?;
                if run.status == RunStatus::Refused {
                    count(
                        &tx,
                        &format!("refusals.{}", run.refusal.unwrap_or("unknown")),
                        1,
                    )?;
                }
                if let Some(p) = proof {
                    tx.execute(
                        "INSERT INTO run_proofs (run, proof) VALUES (?1, ?2)",
                        params![claim.run_id, p],
                    )?;
                }
                tx.commit()?;
            }
            Ok(held)
        })
    }

    fn interrupt(&self, claim: &Claim, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                "UPDATE runs SET status = 'interrupted', finished_ms = ?2, lease_until = NULL, reason = ?3
                 WHERE id = ?1 AND status = 'running' AND lease_epoch = ?4",
                params![claim.run_id, now_ms, reason, claim.epoch],
            )?;
            if n > 0 {
                count(&tx, "runs.interrupted", 1)?;
            }
            tx.commit()?;
            Ok(n > 0)
        })
    }

    fn runs(&self, target: &str, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.target = ?1 ORDER BY runs.id DESC LIMIT ?2"
            ))?;
            st.query_map(
                params![target, i64::try_from(limit).unwrap_or(i64::MAX)],
                run_row,
            )?
            .collect()
        })
    }

    fn run(&self, target: &str, id: i64) -> Result<Option<RunSummary>, StoreError> {
        self.read(|c| {
            c.query_row(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.target = ?1 AND runs.id = ?2"
                ),
                params![target, id],
                run_row,
            )
            .optional()
        })
    }

    fn held_slots(&self) -> Result<Vec<(String, i64)>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT target, max(slot) FROM runs WHERE status NOT IN ('interrupted', 'running') GROUP BY target",
            )?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
    }

    fn latest_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.id IN (
                     SELECT latest_run FROM targets WHERE active = 1 AND latest_run IS NOT NULL)"
            ))?;
            st.query_map([], run_row)?.collect()
        })
    }

    fn run_documents(&self, target: &str, id: i64) -> Result<Option<RunDocuments>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT d.report_json, d.observed_json, runs.compared_with
                 FROM runs JOIN run_documents d ON d.run = runs.id
                 WHERE runs.target = ?1 AND runs.id = ?2",
                params![target, id],
                |r| {
                    Ok(RunDocuments {
                        report_json: r.get(0)?,
                        observed_json: r.get(1)?,
                        compared_with: r.get(2)?,
                    })
                },
            )
            .optional()
        })
    }

    fn latest_report(&self, target: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT d.report_json FROM runs JOIN run_documents d ON d.run = runs.id
                 WHERE runs.target = ?1 ORDER BY runs.id DESC LIMIT 1",
                params![target],
                |r| r.get(0),
            )
            .optional()
        })
    }

    fn last_clean_and_first(&self, target: &str) -> Result<(Option<i64>, Option<i64>), StoreError> {
        self.read(|c| {
            let clean = c.query_row(
                "SELECT max(started_ms) FROM runs WHERE target = ?1 AND status = 'complete'
                     AND critical = 0 AND high = 0 AND medium = 0 AND low = 0",
                params![target],
                |r| r.get(0),
            )?;
            let first = c.query_row(
                "SELECT min(started_ms) FROM runs WHERE target = ?1",
                params![target],
                |r| r.get(0),
            )?;
            Ok((clean, first))
        })
    }

    fn accepted_baseline(&self, target: &str) -> Result<Option<StoredBaseline>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT id, json, accepted_ms FROM baselines WHERE target = ?1 ORDER BY id DESC LIMIT 1",
                params![target],
                baseline_row,
            )
            .optional()
        })
    }

    fn baseline(&self, id: i64) -> Result<Option<StoredBaseline>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT id, json, accepted_ms FROM baselines WHERE id = ?1",
                params![id],
                baseline_row,
            )
            .optional()
        })
    }

    fn accept_baseline(&self, target: &str, json: &str, now_ms: i64) -> Result<i64, StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO baselines (target, json, accepted_ms) VALUES (?1, ?2, ?3)",
                params![target, json, now_ms],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    fn accept_latest(&self, target: &str, now_ms: i64) -> Result<i64, StoreError> {
        self.accept_observed(target, None, now_ms)
    }

    fn accept_run(&self, target: &str, id: i64, now_ms: i64) -> Result<i64, StoreError> {
        self.accept_observed(target, Some(id), now_ms)
    }

    fn prune(&self, keep: &Retention, now_ms: i64) -> Result<u64, StoreError> {
        let cutoff = now_ms.saturating_sub(keep.days.saturating_mul(86_400_000));
        let keep_runs = i64::try_from(keep.runs).unwrap_or(i64::MAX);
        self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // Beyond the newest `keep.runs` of a target, or older than `keep.days`: never a
            // running run, a target's latest, or the run its accepted baseline came from.
            tx.execute_batch("CREATE TEMP TABLE IF NOT EXISTS doomed (id INTEGER PRIMARY KEY); DELETE FROM doomed;")?;
            tx.execute(
                "INSERT INTO doomed (id)
                 SELECT id FROM (
                     SELECT id, target, status, started_ms,
                            row_number() OVER (PARTITION BY target ORDER BY id DESC) AS n
                     FROM runs)
                 WHERE status != 'running' AND (n > ?1 OR started_ms < ?2)
                   AND id NOT IN (SELECT latest_run FROM targets WHERE latest_run IS NOT NULL)
                   AND id NOT IN (
                       SELECT b.source_run FROM baselines b
                       WHERE b.source_run IS NOT NULL
                         AND b.id = (SELECT max(x.id) FROM baselines x WHERE x.target = b.target))",
                params![keep_runs, cutoff],
            )?;
            tx.execute("DELETE FROM run_proofs WHERE run IN (SELECT id FROM doomed)", [])?;
            let n = tx.execute("DELETE FROM runs WHERE id IN (SELECT id FROM doomed)", [])?;
            // Baselines no run compares with any more, the accepted one of each target aside.
            tx.execute(
                "DELETE FROM baselines WHERE
                     id != (SELECT max(x.id) FROM baselines x WHERE x.target = baselines.target)
                     AND id NOT IN (SELECT compared_with FROM runs WHERE compared_with IS NOT NULL)",
                [],
            )?;
            tx.execute("DELETE FROM doomed", [])?;
            tx.commit()?;
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
    }

    fn lease_host(
        &self,
        host: &str,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<HostLease>, StoreError> {
        self.with(|c| {
            c.query_row(
                "INSERT INTO host_leases (host, worker, lease_until, epoch) VALUES (?1, ?2, ?3, 1)
                 ON CONFLICT(host) DO UPDATE SET worker = excluded.worker,
                     lease_until = excluded.lease_until, epoch = host_leases.epoch + 1
                 WHERE host_leases.lease_until < ?4
                 RETURNING epoch",
                params![host, worker, now_ms.saturating_add(lease_ms), now_ms],
                |r| r.get(0),
            )
            .optional()
        })
        .map(|epoch| {
            epoch.map(|epoch| HostLease {
                host: host.to_string(),
                worker: worker.to_string(),
                epoch,
            })
        })
    }

    fn renew_host(
        &self,
        lease: &mut HostLease,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        let n = self.with(|c| {
            c.execute(
                "UPDATE host_leases SET lease_until = ?1, epoch = epoch + 1
                 WHERE host = ?2 AND worker = ?3 AND epoch = ?4",
                params![
                    now_ms.saturating_add(lease_ms),
                    lease.host,
                    lease.worker,
                    lease.epoch
                ],
            )
        })?;
        if n == 1 {
            lease.epoch += 1;
        }
        Ok(n == 1)
    }

    fn release_host(&self, lease: &HostLease, now_ms: i64) -> Result<bool, StoreError> {
        self.with(|c| {
            c.execute(
                "UPDATE host_leases SET lease_until = ?4, epoch = epoch + 1
                 WHERE host = ?1 AND worker = ?2 AND epoch = ?3",
                params![
                    lease.host,
                    lease.worker,
                    lease.epoch,
                    now_ms.saturating_add(super::store::HOST_QUIET_MS)
                ],
            )
        })
        .map(|n| n == 1)
    }

    fn totals(&self) -> Result<Totals, StoreError> {
        self.read(|c| {
            let mut t = Totals::default();
            // Maintained as runs finish (migration 004): no scan of the history per scrape.
            let mut st = c.prepare("SELECT name, value FROM counters ORDER BY name")?;
            let counters: Vec<(String, i64)> = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (name, value) in counters {
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
            t.targets = c
                .query_row("SELECT count(*) FROM targets WHERE active = 1", [], |r| {
                    r.get::<_, i64>(0)
                })?
                .max(0)
                .unsigned_abs();
            // The newest finished run of each active target: its latest run, or the one
            // before it while the latest is still running.
            let mut st = c.prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM {RUNS} WHERE runs.id IN (
                     SELECT CASE WHEN r.status != 'running' THEN r.id ELSE
                         (SELECT max(p.id) FROM runs p WHERE p.target = t.name AND p.status != 'running')
                     END
                     FROM targets t JOIN runs r ON r.id = t.latest_run WHERE t.active = 1)
                 ORDER BY runs.target"
            ))?;
            t.latest = st
                .query_map([], run_row)?
                .collect::<rusqlite::Result<_>>()?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("dir");
        let s = SqliteStore::open(&dir.path().join("d.sqlite3")).expect("open");
        s.sync_targets(
            &[TargetRow {
                name: "a".into(),
                url: "http://127.0.0.1:1/mcp".into(),
                every_ms: 60_000,
            }],
            0,
        )
        .expect("targets");
        (dir, s)
    }

    /// A read is served while other reads hold connections: every reader but one held, a
    /// listing still answers (one reader would wait for the slowest read before it).
    #[test]
    fn reads_do_not_wait_for_one_another() {
        let (_dir, s) = store();
        let s = std::sync::Arc::new(s);
        let held: Vec<_> = s.readers[..READERS - 1]
            .iter()
            .map(|r| r.lock().expect("a reader"))
            .collect();
        assert_eq!(held.len(), READERS - 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = s.clone();
        std::thread::spawn(move || {
            let _ = tx.send(reader.targets().map(|t| t.len()));
        });
        let answered = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("answered while the other readers are held");
        assert_eq!(answered.expect("targets"), 1);
        drop(held);
    }

    fn done(status: RunStatus) -> Finished {
        Finished {
            status,
            exit_code: 0,
            counts: Counts::default(),
            tool_list_sha256: None,
            requests: 3,
            reason: None,
            report_json: "{}".into(),
            observed_json: None,
            compared_with: None,
            refusal: None,
            duration_ms: 5,
            proof: None,
        }
    }

    #[test]
    fn one_run_per_slot_and_no_overlap() {
        let (_d, s) = store();
        let Claimed::Run(c) = s.claim("a", 0, 10, 1000).expect("claim") else {
            panic!("claimed")
        };
        assert_eq!(
            s.claim("a", 0, 11, 1000).expect("claim"),
            Claimed::Busy,
            "same slot, running"
        );
        assert_eq!(
            s.claim("a", 60_000, 12, 1000).expect("claim"),
            Claimed::Busy,
            "overlap"
        );
        assert!(
            s.finish(&c, &done(RunStatus::Complete), 20)
                .expect("finish")
        );
        assert!(
            s.finish(&c, &done(RunStatus::Complete), 21)
                .is_ok_and(|held| !held),
            "twice"
        );
        assert_eq!(
            s.claim("a", 0, 30, 1000).expect("claim"),
            Claimed::Done,
            "slot done"
        );
        assert!(matches!(
            s.claim("a", 60_000, 60_001, 1000).expect("claim"),
            Claimed::Run(_)
        ));
    }

    #[test]
    fn an_interrupted_run_releases_its_slot_and_a_lapsed_lease_is_interrupted() {
        let (_d, s) = store();
        let Claimed::Run(c) = s.claim("a", 0, 10, 1000).expect("claim") else {
            panic!("claimed")
        };
        s.interrupt(&c, "shutdown", 20).expect("interrupt");
        let Claimed::Run(again) = s.claim("a", 0, 30, 1000).expect("claim") else {
            panic!("released")
        };
        // The daemon dies: nobody renews; its slot is not held, and after the lease it can be
        // claimed once more.
        assert!(
            s.held_slots().expect("held").is_empty(),
            "a running row holds nothing"
        );
        assert_eq!(s.claim("a", 0, 500, 1000).expect("claim"), Claimed::Busy);
        let Claimed::Run(third) = s.claim("a", 0, 2000, 1000).expect("claim") else {
            panic!("lapsed")
        };
        // The dead run cannot record a late finish over the new one.
        assert!(
            !s.finish(&again, &done(RunStatus::Complete), 2100)
                .expect("finish")
        );
        let runs = s.runs("a", 10).expect("runs");
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[1].id, again.run_id);
        assert_eq!(runs[1].status, RunStatus::Interrupted);
        assert_eq!(runs[0].id, third.run_id);
        // The old claim's renewal fails: its lease is gone.
        let mut old = again;
        assert!(!s.renew(&mut old, 2001, 1000).expect("renew"));
    }

    #[test]
    fn a_run_keeps_the_proof_it_relied_on_stored_once() {
        let (_d, s) = store();
        let proof = ProofRecord {
            method: "dns-txt".into(),
            host: "mcp.example.com".into(),
            verified_ms: Some(1),
            expires_ms: Some(2),
        };
        let with = |p: Option<ProofRecord>| Finished {
            proof: p,
            ..done(RunStatus::Complete)
        };
        for slot in [0, 60_000] {
            let Claimed::Run(c) = s.claim("a", slot, slot + 1, 1000).expect("claim") else {
                panic!("claimed")
            };
            assert!(
                s.finish(&c, &with(Some(proof.clone())), slot + 2)
                    .expect("finish")
            );
            // A finish without the claim records nothing, its proof neither.
            let other = ProofRecord {
                host: "other.example".into(),
                ..proof.clone()
            };
            assert!(!s.finish(&c, &with(Some(other)), slot + 3).expect("late"));
        }
        let Claimed::Run(c) = s.claim("a", 120_000, 120_001, 1000).expect("claim") else {
            panic!("claimed")
        };
        assert!(s.finish(&c, &with(None), 120_002).expect("finish"));
        let runs = s.runs("a", 10).expect("runs");
        assert_eq!(runs[0].proof, None);
        assert_eq!(runs[1].proof.as_ref(), Some(&proof));
        assert_eq!(runs[2].proof.as_ref(), Some(&proof));
        assert_eq!(
            s.run("a", runs[1].id).expect("run").and_then(|r| r.proof),
            Some(proof)
        );
        let rows: i64 = s
            .with(|c| c.query_row("SELECT count(*) FROM proofs", [], |r| r.get(0)))
            .expect("count");
        assert_eq!(rows, 1, "one row per proof");
    }

    #[test]
    fn a_version_2_database_is_migrated_with_its_runs() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.sqlite3");
        let c = Connection::open(&path).expect("raw");
        c.execute_batch(MIGRATIONS[0]).expect("1");
        c.execute_batch(MIGRATIONS[1]).expect("2");
        c.execute_batch(
            "PRAGMA user_version = 2;
             INSERT INTO targets (name, url, every_ms, added_ms) VALUES ('a', 'http://x/mcp', 60000, 0);
             INSERT INTO runs (target, slot, status, started_ms) VALUES ('a', 0, 'complete', 5);",
        )
        .expect("a version 2 database");
        drop(c);
        let s = SqliteStore::open(&path).expect("migrated");
        let runs = s.runs("a", 10).expect("runs");
        assert_eq!((runs.len(), runs[0].proof.as_ref()), (1, None));
        let version: i64 = s
            .with(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
            .expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
    }

    #[test]
    fn migrations_are_versioned_and_a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.sqlite3");
        drop(SqliteStore::open(&path).expect("open"));
        drop(SqliteStore::open(&path).expect("reopen is a no-op"));
        let c = Connection::open(&path).expect("raw");
        c.pragma_update(None, "user_version", 99).expect("bump");
        let before = schema_of(&c);
        drop(c);
        assert!(matches!(
            SqliteStore::open(&path),
            Err(StoreError::NewerSchema { found: 99, known, .. }) if known == MIGRATIONS.len() as i64
        ));
        let c = Connection::open(&path).expect("raw");
        assert_eq!(
            schema_of(&c),
            before,
            "a refused database is left as it was"
        );
        let version: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(version, 99);
    }

    /// The schema's statements and the version, as SQLite keeps them.
    fn schema_of(c: &Connection) -> Vec<String> {
        let mut q = c
            .prepare("SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY 1")
            .expect("schema");
        q.query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("schema rows")
    }

    /// What the hand-written migrator before rusqlite_migration left (each migration in its own
    /// transaction, `user_version` its count) opens as up to date: nothing is run again.
    #[test]
    fn a_database_the_hand_written_migrator_finished_opens_unchanged() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.sqlite3");
        let mut c = Connection::open(&path).expect("raw");
        for (i, sql) in MIGRATIONS.iter().enumerate() {
            let tx = c.transaction().expect("tx");
            tx.execute_batch(sql).expect("migration");
            tx.pragma_update(None, "user_version", i as i64 + 1)
                .expect("version");
            tx.commit().expect("commit");
        }
        c.execute(
            "INSERT INTO targets (name, url, every_ms, added_ms) VALUES ('a', 'http://x/mcp', 60000, 0)",
            [],
        )
        .expect("a target");
        let before = schema_of(&c);
        drop(c);
        let s = SqliteStore::open(&path).expect("opened");
        let (version, after) = s
            .with(|c| {
                let v: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                Ok((v, schema_of(c)))
            })
            .expect("read");
        assert_eq!(version, MIGRATIONS.len() as i64);
        assert_eq!(after, before, "no migration ran again");
        let names: Vec<String> = s
            .targets()
            .expect("targets")
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["a"], "its target is there");
    }

    /// A finished run of `slot` at `now`, with a report and, when `observed`, a state.
    fn ran(s: &SqliteStore, slot: i64, now: i64, observed: bool) -> i64 {
        let Claimed::Run(c) = s.claim("a", slot, now, 1000).expect("claim") else {
            panic!("claimed slot {slot}")
        };
        let f = Finished {
            report_json: format!("{{\"slot\":{slot}}}"),
            observed_json: observed.then(|| format!("{{\"state\":{slot}}}")),
            ..done(RunStatus::Complete)
        };
        assert!(s.finish(&c, &f, now + 1).expect("finish"));
        c.run_id
    }

    #[test]
    fn documents_live_apart_from_the_rows_that_list_runs() {
        let (_d, s) = store();
        let id = ran(&s, 0, 10, true);
        let docs = s.run_documents("a", id).expect("read").expect("documents");
        assert_eq!(docs.report_json, "{\"slot\":0}");
        assert_eq!(docs.observed_json.as_deref(), Some("{\"state\":0}"));
        assert_eq!(
            s.latest_report("a").expect("read").as_deref(),
            Some("{\"slot\":0}")
        );
        let columns: Vec<String> = s
            .with(|c| {
                let mut st = c.prepare("SELECT name FROM pragma_table_info('runs')")?;
                st.query_map([], |r| r.get(0))?.collect()
            })
            .expect("columns");
        assert!(columns.iter().all(|c| !c.ends_with("_json")), "{columns:?}");
        // Accepting records which run the state came from, in one transaction.
        let b = s.accept_latest("a", 20).expect("accepted");
        let source: Option<i64> = s
            .with(|c| {
                c.query_row("SELECT source_run FROM baselines WHERE id = ?1", [b], |r| {
                    r.get(0)
                })
            })
            .expect("source");
        assert_eq!(source, Some(id));
        assert!(matches!(
            s.accept_latest("nope", 20),
            Err(StoreError::UnknownTarget(_))
        ));
        assert!(matches!(
            s.accept_run("a", id + 99, 20),
            Err(StoreError::NoSuchRunToAccept(_, _))
        ));
    }

    #[test]
    fn retention_keeps_the_newest_runs_the_accepted_baseline_and_the_counters() {
        let (_d, s) = store();
        let day = 86_400_000;
        // Run 0 is accepted; then 299 more runs, one a minute.
        let first = ran(&s, 0, 10, true);
        s.accept_run("a", first, 11).expect("accepted");
        for n in 1..300 {
            ran(&s, n * 60_000, n * 60_000 + 10, false);
        }
        let before = s.totals().expect("totals");
        let deleted = s
            .prune(
                &Retention {
                    runs: 200,
                    days: 90,
                },
                300 * 60_000,
            )
            .expect("prune");
        assert_eq!(
            deleted, 99,
            "300 runs, 200 kept, and the accepted baseline's"
        );
        let runs = s.runs("a", 1000).expect("runs");
        assert_eq!(runs.len(), 201);
        assert_eq!(runs[0].slot, 299 * 60_000, "the newest kept");
        assert_eq!(runs[200].id, first, "the accepted baseline's run kept");
        assert!(s.run_documents("a", first).expect("read").is_some());
        // Counters do not go down when history goes.
        assert_eq!(
            s.totals().expect("totals").runs_by_status,
            before.runs_by_status
        );
        assert_eq!(
            before.runs_by_status,
            vec![(RunStatus::Complete, 300)],
            "counted as runs finished"
        );
        // Age: 91 days later only the latest and the accepted baseline's run are left.
        let deleted = s
            .prune(
                &Retention {
                    runs: 200,
                    days: 90,
                },
                300 * 60_000 + 91 * day,
            )
            .expect("prune");
        assert_eq!(deleted, 199);
        let left: Vec<i64> = s
            .runs("a", 1000)
            .expect("runs")
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&first));
        let orphans: i64 = s
            .with(|c| {
                c.query_row(
                    "SELECT count(*) FROM run_documents WHERE run NOT IN (SELECT id FROM runs)",
                    [],
                    |r| r.get(0),
                )
            })
            .expect("count");
        assert_eq!(orphans, 0, "documents go with their runs");
    }

    #[test]
    fn a_version_3_database_moves_its_documents_and_seeds_its_counters() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.sqlite3");
        let c = Connection::open(&path).expect("raw");
        for m in &MIGRATIONS[..3] {
            c.execute_batch(m).expect("migration");
        }
        c.execute_batch(
            "PRAGMA user_version = 3;
             INSERT INTO targets (name, url, every_ms, added_ms) VALUES ('a', 'http://x/mcp', 60000, 0);
             INSERT INTO runs (target, slot, status, started_ms, requests, report_json, observed_json)
                 VALUES ('a', 0, 'complete', 5, 7, '{\"r\":1}', '{\"o\":1}');
             INSERT INTO runs (target, slot, status, started_ms, requests, refusal, report_json)
                 VALUES ('a', 60000, 'refused', 6, 1, 'ownership', '{\"r\":2}');",
        )
        .expect("a version 3 database");
        drop(c);
        let s = SqliteStore::open(&path).expect("migrated");
        let runs = s.runs("a", 10).expect("runs");
        let docs = s
            .run_documents("a", runs[1].id)
            .expect("read")
            .expect("moved");
        assert_eq!(
            (docs.report_json.as_str(), docs.observed_json.as_deref()),
            ("{\"r\":1}", Some("{\"o\":1}"))
        );
        let t = s.totals().expect("totals");
        assert_eq!(t.requests, 8);
        assert_eq!(t.refusals, vec![("ownership".to_string(), 1)]);
        let mut by = t.runs_by_status.clone();
        by.sort_by_key(|(s, _)| s.as_str());
        assert_eq!(by, vec![(RunStatus::Complete, 1), (RunStatus::Refused, 1)]);
    }

    /// Fencing: `finish`, `interrupt` and `renew` hold only with the claim's current epoch. A
    /// copy of the claim from before a renewal is stale and loses; the current one wins.
    #[test]
    fn a_stale_epoch_loses_finish_interrupt_and_renew() {
        let (_d, s) = store();
        let Claimed::Run(stale) = s.claim("a", 0, 10, 1000).expect("claim") else {
            panic!("claimed")
        };
        let mut current = stale.clone();
        assert!(s.renew(&mut current, 100, 1000).expect("renew"));
        assert_eq!(current.epoch, stale.epoch + 1);
        assert!(
            !s.finish(&stale, &done(RunStatus::Complete), 200)
                .expect("finish")
        );
        assert!(!s.interrupt(&stale, "stale", 200).expect("interrupt"));
        let mut again = stale.clone();
        assert!(!s.renew(&mut again, 200, 1000).expect("renew"));
        assert_eq!(s.runs("a", 1).expect("runs")[0].status, RunStatus::Running);
        assert!(
            s.finish(&current, &done(RunStatus::Complete), 300)
                .expect("finish")
        );
        assert_eq!(s.runs("a", 1).expect("runs")[0].status, RunStatus::Complete);
    }

    fn imported(name: &str, every_ms: i64) -> ImportedTarget {
        ImportedTarget {
            name: name.into(),
            url: format!("https://{name}.example/mcp"),
            every_ms,
            spec: format!(
                "{{\"every\":\"{}s\",\"name\":\"{name}\",\"url\":\"https://{name}.example/mcp\"}}",
                every_ms / 1000
            ),
        }
    }

    fn names(rows: &[impl AsRef<str>]) -> Vec<&str> {
        rows.iter().map(AsRef::as_ref).collect()
    }

    impl AsRef<str> for TargetRow {
        fn as_ref(&self) -> &str {
            &self.name
        }
    }

    impl AsRef<str> for ImportedTarget {
        fn as_ref(&self) -> &str {
            &self.name
        }
    }

    #[test]
    fn thousands_of_targets_import_in_one_go_and_again_change_nothing() {
        let (_d, s) = store();
        let many: Vec<ImportedTarget> = (0..3000)
            .map(|i| imported(&format!("t{i:04}"), 3_600_000))
            .collect();
        let first = s.import_targets(&many, 1).expect("import");
        assert_eq!(
            first,
            ImportSummary {
                added: 3000,
                ..ImportSummary::default()
            }
        );
        assert_eq!(
            s.imported_targets().expect("read"),
            many,
            "by name, as imported"
        );
        let again = s.import_targets(&many, 2).expect("import");
        assert_eq!(
            again,
            ImportSummary {
                unchanged: 3000,
                ..ImportSummary::default()
            }
        );
        // One changed target is updated; the rest are unchanged.
        let mut changed = many.clone();
        changed[7] = imported("t0007", 7_200_000);
        let third = s.import_targets(&changed, 3).expect("import");
        assert_eq!((third.updated, third.unchanged), (1, 2999));
        let stored = s.imported_targets().expect("read");
        assert_eq!(stored[7].every_ms, 7_200_000);
        assert_eq!(
            s.targets().expect("targets").len(),
            3001,
            "and the configured one"
        );
    }

    #[test]
    fn a_failed_import_keeps_nothing() {
        let (_d, s) = store();
        // The second row is refused (a trigger) inside the one transaction.
        let broken = s.with(|c| {
            c.execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON targets WHEN NEW.name = 'bad'
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
        });
        broken.expect("trigger");
        let list = [imported("good", 60_000), imported("bad", 60_000)];
        assert!(s.import_targets(&list, 1).is_err());
        assert!(
            s.imported_targets().expect("read").is_empty(),
            "all or none"
        );
    }

    #[test]
    fn a_removed_target_keeps_its_history_and_comes_back_with_it() {
        let (_d, s) = store();
        s.import_targets(&[imported("imp", 60_000)], 1)
            .expect("import");
        let Claimed::Run(c) = s.claim("imp", 0, 10, 1000).expect("claim") else {
            panic!("claimed")
        };
        assert!(
            s.finish(&c, &done(RunStatus::Complete), 20)
                .expect("finish")
        );
        s.remove_target("imp").expect("removed");
        assert!(s.imported_targets().expect("read").is_empty());
        assert_eq!(names(&s.targets().expect("targets")), ["a"]);
        assert_eq!(s.runs("imp", 10).expect("runs").len(), 1, "history kept");
        assert!(matches!(
            s.remove_target("imp"),
            Err(StoreError::UnknownTarget(n)) if n == "imp"
        ));
        assert!(matches!(
            s.remove_target("never"),
            Err(StoreError::UnknownTarget(_))
        ));
        assert!(matches!(
            s.remove_target("a"),
            Err(StoreError::ConfiguredTarget(n)) if n == "a"
        ));
        // Imported again: added, with its history.
        let back = s
            .import_targets(&[imported("imp", 60_000)], 30)
            .expect("import");
        assert_eq!(back.added, 1);
        assert_eq!(s.runs("imp", 10).expect("runs").len(), 1);
    }

    #[test]
    fn a_start_deactivates_only_the_files_targets_and_the_file_wins_by_name() {
        let (_d, s) = store();
        s.import_targets(&[imported("imp", 60_000), imported("both", 60_000)], 1)
            .expect("import");
        let row = |name: &str| TargetRow {
            name: name.into(),
            url: format!("http://{name}.config/mcp"),
            every_ms: 120_000,
        };
        // "a" left the file, "both" joined it: the file's now.
        s.sync_targets(&[row("both")], 2).expect("sync");
        assert_eq!(names(&s.targets().expect("targets")), ["both", "imp"]);
        assert_eq!(names(&s.imported_targets().expect("read")), ["imp"]);
        let both = s
            .targets()
            .expect("targets")
            .into_iter()
            .find(|t| t.name == "both")
            .expect("listed");
        assert_eq!(both.url, "http://both.config/mcp");
        // Importing a name the file holds keeps the file's.
        let shadowed = s
            .import_targets(&[imported("both", 60_000), imported("imp", 60_000)], 3)
            .expect("import");
        assert_eq!((shadowed.shadowed, shadowed.unchanged), (1, 1));
        assert_eq!(names(&s.imported_targets().expect("read")), ["imp"]);
        // A start with no configured targets at all leaves the imported ones listed.
        s.sync_targets(&[], 4).expect("sync");
        assert_eq!(names(&s.targets().expect("targets")), ["imp"]);
        // "a" left the file: imported now, it is added back (with its history).
        let a = s
            .import_targets(&[imported("a", 60_000)], 5)
            .expect("import");
        assert_eq!(a.added, 1);
        assert_eq!(names(&s.imported_targets().expect("read")), ["a", "imp"]);
    }

    #[test]
    fn a_version_4_database_keeps_its_targets_as_configured() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.sqlite3");
        let c = Connection::open(&path).expect("raw");
        for m in &MIGRATIONS[..4] {
            c.execute_batch(m).expect("migration");
        }
        c.execute_batch(
            "PRAGMA user_version = 4;
             INSERT INTO targets (name, url, every_ms, added_ms) VALUES ('old', 'http://x/mcp', 60000, 0);",
        )
        .expect("a version 4 database");
        drop(c);
        let s = SqliteStore::open(&path).expect("migrated");
        assert_eq!(names(&s.targets().expect("targets")), ["old"]);
        assert!(s.imported_targets().expect("read").is_empty());
        // It is the file's: a start without it deactivates it.
        s.sync_targets(&[], 1).expect("sync");
        assert!(s.targets().expect("targets").is_empty());
    }
}
