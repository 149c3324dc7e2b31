//! The store's conformance suite (issue 25): the same cases against the embedded SQLite store
//! and against a real PostgreSQL (a temporary cluster started by the test): claims, leases and
//! their epochs, hosts leased to one worker at a time, documents, accept, retention, counters,
//! concurrent claims, and migrations from an empty database and from a previous version.

use std::sync::Arc;

use mcpprobe::daemon::postgres::PgStore;
use mcpprobe::daemon::sqlite::SqliteStore;
use mcpprobe::daemon::store::{
    Claim, Claimed, Counts, Finished, HOST_QUIET_MS, HostLease, ImportedTarget, ProofRecord,
    Retention, RunStatus, Store, StoreError, TargetRow,
};

use crate::support::postgres::TempPostgres;

type Case = fn(&Arc<dyn Store>);

/// Every case, by name (a failure names its case and its store).
const CASES: &[(&str, Case)] = &[
    ("one run per slot, no overlap", one_run_per_slot),
    (
        "an interrupted run releases its slot",
        interrupted_and_lapsed,
    ),
    (
        "a stale epoch loses finish, interrupt and renew",
        stale_epoch,
    ),
    ("a run keeps the proof it relied on", proofs),
    ("documents apart, accept in one step", documents_and_accept),
    ("retention keeps its bounds", retention),
    ("a host is leased to one worker at a time", host_leases),
    (
        "concurrent claims of one slot: exactly one run",
        concurrent_claims,
    ),
    ("counters and latest runs", totals),
    ("imported targets beside the file's", imports),
];

fn target(name: &str) -> TargetRow {
    TargetRow {
        name: name.into(),
        url: format!("http://127.0.0.1:1/{name}"),
        every_ms: 60_000,
    }
}

fn seed(s: &dyn Store) {
    s.sync_targets(&[target("a"), target("b")], 0)
        .expect("targets");
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

fn claimed(s: &dyn Store, target: &str, slot: i64, now: i64) -> Claim {
    match s.claim(target, slot, now, 1000).expect("claim") {
        Claimed::Run(c) => c,
        other => panic!("slot {slot} of {target} at {now}: {other:?}"),
    }
}

fn one_run_per_slot(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let mine = match s
        .claim_for("b", 120_000, "worker-9", 1, 1000)
        .expect("claim")
    {
        Claimed::Run(c) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        s.run("b", mine.run_id).expect("run").and_then(|r| r.worker),
        Some("worker-9".to_string())
    );
    assert!(s.interrupt(&mine, "made room", 2).expect("interrupt"));
    let c = claimed(s, "a", 0, 10);
    assert_eq!(s.claim("a", 0, 11, 1000).expect("claim"), Claimed::Busy);
    assert_eq!(
        s.claim("a", 60_000, 12, 1000).expect("claim"),
        Claimed::Busy,
        "no overlap"
    );
    // Another target is not held by it.
    claimed(s, "b", 0, 12);
    assert!(
        s.finish(&c, &done(RunStatus::Complete), 20)
            .expect("finish")
    );
    assert!(
        !s.finish(&c, &done(RunStatus::Complete), 21).expect("twice"),
        "a second finish of one claim records nothing"
    );
    assert_eq!(s.claim("a", 0, 30, 1000).expect("claim"), Claimed::Done);
    claimed(s, "a", 60_000, 60_001);
    let runs = s.runs("b", 10).expect("runs");
    assert_eq!(
        runs[0].worker.as_deref(),
        Some("daemon"),
        "the default worker"
    );
    assert!(matches!(
        s.claim("nope", 0, 1, 1000),
        Err(StoreError::UnknownTarget(_))
    ));
}

fn interrupted_and_lapsed(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let c = claimed(s, "a", 0, 10);
    assert!(s.interrupt(&c, "shutdown", 20).expect("interrupt"));
    assert!(!s.interrupt(&c, "again", 21).expect("interrupt"), "once");
    let again = claimed(s, "a", 0, 30);
    assert!(
        s.held_slots().expect("held").is_empty(),
        "running holds nothing"
    );
    // Its worker dies: after the lease (1 s) the slot is claimed once more.
    assert_eq!(s.claim("a", 0, 500, 1000).expect("claim"), Claimed::Busy);
    let third = claimed(s, "a", 0, 2000);
    assert!(
        !s.finish(&again, &done(RunStatus::Complete), 2100)
            .expect("finish"),
        "the dead run cannot record over the new one"
    );
    let mut old = again.clone();
    assert!(!s.renew(&mut old, 2001, 1000).expect("renew"));
    let runs = s.runs("a", 10).expect("runs");
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].id, third.run_id);
    assert_eq!(runs[1].id, again.run_id);
    assert_eq!(runs[1].status, RunStatus::Interrupted);
    assert!(
        runs[1]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("lease")),
        "{:?}",
        runs[1].reason
    );
}

fn stale_epoch(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let first = claimed(s, "a", 0, 10);
    let mut current = first.clone();
    assert!(s.renew(&mut current, 100, 1000).expect("renew"));
    assert_eq!(current.epoch, first.epoch + 1);
    let mut stale = first.clone();
    assert!(!s.renew(&mut stale, 101, 1000).expect("renew"), "renew");
    assert_eq!(
        stale.epoch, first.epoch,
        "a lost renewal leaves the copy as it was"
    );
    assert!(
        !s.finish(&first, &done(RunStatus::Complete), 102)
            .expect("finish"),
        "finish"
    );
    assert!(
        !s.interrupt(&first, "stale", 103).expect("interrupt"),
        "interrupt"
    );
    assert_eq!(
        s.run("a", first.run_id).expect("run").map(|r| r.status),
        Some(RunStatus::Running),
        "nothing recorded by the stale copy"
    );
    assert!(
        s.finish(&current, &done(RunStatus::Complete), 104)
            .expect("finish")
    );
}

fn proofs(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let proof = ProofRecord {
        method: "dns-txt".into(),
        host: "mcp.example.com".into(),
        verified_ms: Some(1),
        expires_ms: None,
    };
    for slot in [0, 60_000] {
        let c = claimed(s, "a", slot, slot + 1);
        let f = Finished {
            proof: Some(proof.clone()),
            ..done(RunStatus::Complete)
        };
        assert!(s.finish(&c, &f, slot + 2).expect("finish"));
    }
    let runs = s.runs("a", 10).expect("runs");
    assert_eq!(runs.len(), 2);
    assert!(
        runs.iter().all(|r| r.proof.as_ref() == Some(&proof)),
        "{runs:?}"
    );
    assert_eq!(
        s.run("a", runs[0].id).expect("run").and_then(|r| r.proof),
        Some(proof)
    );
}

fn ran(s: &dyn Store, target: &str, slot: i64, now: i64, observed: bool) -> i64 {
    let c = claimed(s, target, slot, now);
    let f = Finished {
        report_json: format!("{{\"slot\":{slot}}}"),
        observed_json: observed.then(|| format!("{{\"state\":{slot}}}")),
        ..done(RunStatus::Complete)
    };
    assert!(s.finish(&c, &f, now + 1).expect("finish"));
    c.run_id
}

fn documents_and_accept(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let first = ran(s, "a", 0, 10, true);
    let second = ran(s, "a", 60_000, 60_010, false);
    let docs = s
        .run_documents("a", first)
        .expect("read")
        .expect("documents");
    assert_eq!(docs.report_json, "{\"slot\":0}");
    assert_eq!(docs.observed_json.as_deref(), Some("{\"state\":0}"));
    assert_eq!(
        s.latest_report("a").expect("read").as_deref(),
        Some("{\"slot\":60000}")
    );
    assert!(
        s.run_documents("b", first).expect("read").is_none(),
        "another target's"
    );
    // The latest run with a state is the first one; accepting it records its state.
    let b = s.accept_latest("a", 70_000).expect("accepted");
    let stored = s.accepted_baseline("a").expect("read").expect("baseline");
    assert_eq!((stored.id, stored.json.as_str()), (b, "{\"state\":0}"));
    assert_eq!(s.baseline(b).expect("read"), Some(stored));
    assert!(matches!(
        s.accept_run("a", second, 70_001),
        Err(StoreError::NoSuchRunToAccept(_, _))
    ));
    assert!(matches!(
        s.accept_latest("b", 70_002),
        Err(StoreError::NothingToAccept(_))
    ));
    assert!(matches!(
        s.accept_latest("nope", 70_003),
        Err(StoreError::UnknownTarget(_))
    ));
    let pinned = s
        .accept_baseline("b", "{\"pinned\":1}", 70_004)
        .expect("pin");
    assert_eq!(
        s.accepted_baseline("b").expect("read").map(|b| b.id),
        Some(pinned)
    );
}

fn retention(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let day = 86_400_000;
    let first = ran(s, "a", 0, 10, true);
    s.accept_run("a", first, 11).expect("accepted");
    for n in 1..60 {
        ran(s, "a", n * 60_000, n * 60_000 + 10, false);
    }
    let keep = Retention { runs: 20, days: 90 };
    assert_eq!(
        s.prune(&keep, 60 * 60_000).expect("prune"),
        39,
        "60 runs, 20 kept, and the accepted baseline's"
    );
    let runs = s.runs("a", 1000).expect("runs");
    assert_eq!(runs.len(), 21);
    assert_eq!(runs[0].slot, 59 * 60_000);
    assert_eq!(runs[20].id, first);
    assert!(s.run_documents("a", first).expect("read").is_some());
    assert_eq!(s.prune(&keep, 60 * 60_000).expect("again"), 0, "idempotent");
    // 91 days on: the latest and the accepted baseline's run are left.
    assert_eq!(s.prune(&keep, 60 * 60_000 + 91 * day).expect("age"), 19);
    let left: Vec<i64> = s
        .runs("a", 1000)
        .expect("runs")
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(left.len(), 2);
    assert!(left.contains(&first));
    // A running run is never deleted, however old.
    let running = claimed(s, "b", 0, 5);
    assert_eq!(s.prune(&keep, 1000 * day).expect("prune"), 0);
    assert!(s.run("b", running.run_id).expect("run").is_some());
    // Counters do not go down with the history.
    let totals = s.totals().expect("totals");
    assert_eq!(totals.runs_by_status, vec![(RunStatus::Complete, 60)]);
}

fn host_leases(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let mut one = s
        .lease_host("127.0.0.2", "w1", 0, 1000)
        .expect("lease")
        .expect("granted");
    assert_eq!(one.worker, "w1");
    assert_eq!(
        s.lease_host("127.0.0.2", "w2", 10, 1000).expect("lease"),
        None
    );
    assert_eq!(
        s.lease_host("127.0.0.2", "w1", 10, 1000).expect("lease"),
        None,
        "a live lease is not granted twice, to its own worker neither"
    );
    assert!(
        s.lease_host("127.0.0.3", "w2", 10, 1000)
            .expect("lease")
            .is_some(),
        "another host"
    );
    assert!(s.renew_host(&mut one, 900, 1000).expect("renew"));
    assert_eq!(
        s.lease_host("127.0.0.2", "w2", 1500, 1000).expect("lease"),
        None,
        "renewed until 1900"
    );
    // w1 stops renewing: at 2000 the lease lapsed and w2 takes the host.
    let two = s
        .lease_host("127.0.0.2", "w2", 2000, 1000)
        .expect("lease")
        .expect("taken over");
    assert!(two.epoch > one.epoch);
    let mut late = one.clone();
    assert!(!s.renew_host(&mut late, 2001, 1000).expect("renew"), "lost");
    assert!(
        !s.release_host(&one, 2001).expect("release"),
        "not its lease any more"
    );
    assert!(s.release_host(&two, 2002).expect("release"));
    assert_eq!(
        s.lease_host("127.0.0.2", "w1", 2003, 1000).expect("lease"),
        None,
        "quiet for a second after it was given up"
    );
    assert!(
        s.lease_host("127.0.0.2", "w1", 2002 + HOST_QUIET_MS + 1, 1000)
            .expect("lease")
            .is_some(),
        "free once given up and quiet"
    );
}

fn concurrent_claims(s: &Arc<dyn Store>) {
    // Eight workers claim the same slot of the same target at once: one run.
    let results: Vec<Claimed> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let s = s.clone();
                scope.spawn(move || s.claim("a", 0, 10 + i, 60_000).expect("claim"))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a claiming thread"))
            .collect()
    });
    let runs = results
        .iter()
        .filter(|c| matches!(c, Claimed::Run(_)))
        .count();
    assert_eq!(runs, 1, "{results:?}");
    assert_eq!(s.runs("a", 10).expect("runs").len(), 1);
    // And eight hosts' leases at once for one host: one worker.
    let granted = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let s = s.clone();
                scope.spawn(move || {
                    s.lease_host("h", &format!("w{i}"), 10, 60_000)
                        .expect("lease")
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("a leasing thread"))
            .count()
    });
    assert_eq!(granted, 1);
}

fn totals(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let c = claimed(s, "a", 0, 1);
    let f = Finished {
        counts: Counts {
            high: 2,
            low: 1,
            ..Counts::default()
        },
        requests: 7,
        ..done(RunStatus::Complete)
    };
    assert!(s.finish(&c, &f, 2).expect("finish"));
    let c = claimed(s, "b", 0, 3);
    let f = Finished {
        refusal: Some("ownership"),
        requests: 1,
        ..done(RunStatus::Refused)
    };
    assert!(s.finish(&c, &f, 4).expect("finish"));
    // b runs again: its latest is running, the finished one before it counts.
    let running = claimed(s, "b", 60_000, 60_001);
    let t = s.totals().expect("totals");
    assert_eq!(t.targets, 2);
    assert_eq!(t.requests, 8);
    assert_eq!(
        t.runs_by_status,
        vec![(RunStatus::Complete, 1), (RunStatus::Refused, 1)]
    );
    assert_eq!(t.refusals, vec![("ownership".to_string(), 1)]);
    assert_eq!((t.latest_findings.high, t.latest_findings.low), (2, 1));
    assert_eq!(t.latest.len(), 2);
    let latest = s.latest_runs().expect("latest");
    assert!(latest.iter().any(|r| r.id == running.run_id));
    let mut held = s.held_slots().expect("held");
    held.sort();
    assert_eq!(held, vec![("a".to_string(), 0), ("b".to_string(), 0)]);
    // A target that left the configuration keeps its history, unlisted.
    s.sync_targets(&[target("a")], 70_000).expect("sync");
    assert_eq!(
        s.targets()
            .expect("targets")
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        vec!["a"]
    );
    assert_eq!(s.runs("b", 10).expect("runs").len(), 2);
}

fn imported(name: &str, spec: &str) -> ImportedTarget {
    ImportedTarget {
        name: name.into(),
        url: format!("http://127.0.0.1:1/{name}"),
        every_ms: 60_000,
        spec: spec.into(),
    }
}

fn imports(s: &Arc<dyn Store>) {
    let s = s.as_ref();
    let many: Vec<ImportedTarget> = (0..500)
        .map(|i| imported(&format!("i{i}"), &format!("{{\"n\":{i}}}")))
        .collect();
    let first = s.import_targets(&many, 1).expect("import");
    assert_eq!((first.added, first.updated, first.unchanged), (500, 0, 0));
    let again = s.import_targets(&many, 2).expect("again");
    assert_eq!(
        (again.added, again.updated, again.unchanged),
        (0, 0, 500),
        "idempotent"
    );
    let changed = s
        .import_targets(
            &[imported("i7", "{\"n\":\"seven\"}"), imported("a", "{}")],
            3,
        )
        .expect("changed");
    assert_eq!((changed.updated, changed.shadowed), (1, 1), "{changed:?}");
    let listed = s.imported_targets().expect("imported");
    assert_eq!(listed.len(), 500);
    assert_eq!(
        listed
            .iter()
            .find(|t| t.name == "i7")
            .map(|t| t.spec.as_str()),
        Some("{\"n\":\"seven\"}")
    );
    // The file's targets are synced without touching imported ones; the file's stay its own.
    s.sync_targets(&[target("a")], 4).expect("sync");
    assert_eq!(
        s.targets().expect("targets").len(),
        501,
        "a and the 500 imported"
    );
    assert!(matches!(
        s.remove_target("a"),
        Err(StoreError::ConfiguredTarget(_))
    ));
    // Removed: unlisted, its history kept; imported again, it comes back with it.
    let c = claimed(s, "i1", 0, 5);
    assert!(s.finish(&c, &done(RunStatus::Complete), 6).expect("finish"));
    s.remove_target("i1").expect("remove");
    assert!(matches!(
        s.remove_target("i1"),
        Err(StoreError::UnknownTarget(_))
    ));
    assert!(
        s.imported_targets()
            .expect("imported")
            .iter()
            .all(|t| t.name != "i1")
    );
    let back = s.import_targets(&many[1..2], 7).expect("back");
    assert_eq!(back.added, 1);
    assert_eq!(s.runs("i1", 10).expect("runs").len(), 1, "history kept");
}

fn run_cases(kind: &str, mut fresh: impl FnMut() -> Arc<dyn Store>) {
    for (name, case) in CASES {
        let s = fresh();
        seed(s.as_ref());
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&s)));
        assert!(
            ran.is_ok(),
            "{kind}: the case \"{name}\" failed (its panic is above)"
        );
    }
}

#[test]
fn the_sqlite_store_conforms() {
    let dirs: std::cell::RefCell<Vec<tempfile::TempDir>> = Default::default();
    run_cases("sqlite", || {
        let dir = tempfile::tempdir().expect("dir");
        let s = SqliteStore::open(&dir.path().join("d.sqlite3")).expect("open");
        dirs.borrow_mut().push(dir);
        Arc::new(s)
    });
}

const VAR: &str = "TEST_DATABASE_URL";

#[test]
fn the_postgres_store_conforms() {
    let pg = TempPostgres::start();
    run_cases("postgres", || {
        Arc::new(PgStore::connect(&pg.database(), VAR).expect("connect"))
    });
}

#[test]
fn postgres_migrations_from_empty_from_a_previous_version_and_a_newer_one_refused() {
    let pg = TempPostgres::start();
    // Empty: two daemons starting together migrate once, both see the current schema.
    let url = pg.database();
    let both: Vec<Result<PgStore, StoreError>> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| PgStore::connect(&url, VAR)))
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    let versions: Vec<i64> = both
        .iter()
        .map(|s| {
            s.as_ref()
                .expect("connect")
                .schema_version()
                .expect("version")
        })
        .collect();
    assert_eq!(versions[0], versions[1]);
    assert!(versions[0] >= 5, "{versions:?}");
    drop(both);
    let again = PgStore::connect(&url, VAR).expect("reopen is a no-op");
    assert_eq!(again.schema_version().expect("version"), versions[0]);

    // A version 3 database with runs whose documents were columns of the run.
    let url = pg.database();
    let old = PgStore::connect_at(&url, VAR, 3).expect("version 3");
    assert_eq!(old.schema_version().expect("version"), 3);
    old.execute_raw(
        "INSERT INTO targets (name, url, every_ms, added_ms) VALUES ('a', 'http://x/mcp', 60000, 0);
         INSERT INTO runs (target, slot, status, started_ms, requests, report_json, observed_json)
             VALUES ('a', 0, 'complete', 5, 7, '{\"r\":1}', '{\"o\":1}');
         INSERT INTO runs (target, slot, status, started_ms, requests, refusal, report_json)
             VALUES ('a', 60000, 'refused', 6, 1, 'ownership', '{\"r\":2}');",
    )
    .expect("a version 3 database");
    drop(old);
    let s = PgStore::connect(&url, VAR).expect("migrated");
    assert_eq!(s.schema_version().expect("version"), versions[0]);
    let runs = s.runs("a", 10).expect("runs");
    assert_eq!(runs.len(), 2);
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
    assert_eq!(
        t.runs_by_status,
        vec![(RunStatus::Complete, 1), (RunStatus::Refused, 1)]
    );
    assert_eq!(t.refusals, vec![("ownership".to_string(), 1)]);
    // Claims go on from where the history is.
    assert_eq!(s.claim("a", 0, 10, 1000).expect("claim"), Claimed::Done);

    // Newer than this build: refused, never downgraded.
    s.execute_raw("UPDATE mcpprobe_schema SET version = 99")
        .expect("bump");
    drop(s);
    match PgStore::connect(&url, VAR) {
        Err(StoreError::NewerSchema {
            found: 99, path, ..
        }) => {
            assert!(
                path.contains(VAR) && !path.contains("postgres://"),
                "{path}"
            );
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a newer schema was accepted"),
    }
}

/// What migrations 005 and 006 must keep of a database at version 4 or 5: its runs, documents,
/// counters and accepted baseline (and, from 5, each run's worker and the host leases held across
/// the upgrade), its targets staying the configuration's (migration 006's `source`).
fn upgraded_keeps_history(s: &PgStore, name: &str) {
    let s: &dyn Store = s;
    let runs = s.runs(name, 10).expect("runs");
    assert_eq!(runs.len(), 1, "{name}");
    assert_eq!((runs[0].status, runs[0].requests), (RunStatus::Complete, 7));
    let docs = s
        .run_documents(name, runs[0].id)
        .expect("read")
        .expect("documents kept");
    assert_eq!(
        (docs.report_json.as_str(), docs.observed_json.as_deref()),
        ("{\"r\":1}", Some("{\"o\":1}"))
    );
    let t = s.totals().expect("totals");
    assert_eq!(t.requests, 7, "the counters, not a recount");
    assert_eq!(t.runs_by_status, vec![(RunStatus::Complete, 1)]);
    assert_eq!(
        s.accepted_baseline(name).expect("baseline").map(|b| b.json),
        Some("{\"o\":1}".to_string())
    );
    assert_eq!(s.latest_runs().expect("latest").len(), 1);
    // The targets are the configuration's: none imported, none removable as imported.
    assert!(s.imported_targets().expect("imported").is_empty());
    assert!(matches!(
        s.remove_target(name),
        Err(StoreError::ConfiguredTarget(n)) if n == name
    ));
    // Claims go on from the history and record their worker.
    assert_eq!(s.claim(name, 0, 10, 1000).expect("claim"), Claimed::Done);
    let Claimed::Run(c) = s
        .claim_for(name, 60_000, "w2", 60_001, 1000)
        .expect("claim")
    else {
        panic!("the next slot of {name} is free")
    };
    assert!(
        s.finish(&c, &done(RunStatus::Complete), 60_002)
            .expect("finish")
    );
    assert_eq!(
        s.runs(name, 1).expect("runs")[0].worker.as_deref(),
        Some("w2")
    );
}

#[test]
fn postgres_migrations_from_versions_4_and_5_keep_the_history() {
    let pg = TempPostgres::start();
    let current = PgStore::connect(&pg.database(), VAR)
        .expect("current")
        .schema_version()
        .expect("version");
    assert!(current >= 6, "{current}");
    // One target with a finished run, its documents, the counters the run added and a baseline
    // accepted from it, as the store of that version wrote them (ids from the identities).
    let history = "INSERT INTO targets (name, url, every_ms, added_ms) VALUES ('a', 'http://x/mcp', 60000, 0);
         INSERT INTO runs (target, slot, status, started_ms, finished_ms, requests)
             VALUES ('a', 0, 'complete', 5, 6, 7);
         INSERT INTO run_documents (run, report_json, observed_json)
             SELECT id, '{\"r\":1}', '{\"o\":1}' FROM runs WHERE target = 'a';
         INSERT INTO baselines (target, json, accepted_ms, source_run)
             SELECT 'a', '{\"o\":1}', 6, id FROM runs WHERE target = 'a';
         UPDATE targets SET latest_run = (SELECT max(id) FROM runs WHERE target = 'a');
         INSERT INTO counters (name, value) VALUES ('runs.complete', 1), ('requests', 7)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value;";

    // Version 4: documents apart and counters; no host leases, no worker, no target source.
    let url = pg.database();
    let old = PgStore::connect_at(&url, VAR, 4).expect("version 4");
    assert_eq!(old.schema_version().expect("version"), 4);
    old.execute_raw(history).expect("a version 4 database");
    drop(old);
    let s = PgStore::connect(&url, VAR).expect("migrated from 4");
    assert_eq!(s.schema_version().expect("version"), current);
    upgraded_keeps_history(&s, "a");
    assert_eq!(
        s.runs("a", 10).expect("runs")[1].worker,
        None,
        "ran before workers"
    );
    assert!(
        s.lease_host("x.example", "w1", 0, 1000)
            .expect("lease")
            .is_some(),
        "host leases work"
    );
    drop(s);

    // Version 5: the run's worker and a host lease held by w1 until 5000, epoch 3.
    let url = pg.database();
    let old = PgStore::connect_at(&url, VAR, 5).expect("version 5");
    assert_eq!(old.schema_version().expect("version"), 5);
    old.execute_raw(&format!(
        "{history}
         UPDATE runs SET worker = 'w1' WHERE target = 'a';
         INSERT INTO host_leases (host, worker, lease_until, epoch) VALUES ('x.example', 'w1', 5000, 3);"
    ))
    .expect("a version 5 database");
    drop(old);
    let s = PgStore::connect(&url, VAR).expect("migrated from 5");
    assert_eq!(s.schema_version().expect("version"), current);
    upgraded_keeps_history(&s, "a");
    assert_eq!(
        s.runs("a", 10).expect("runs")[1].worker.as_deref(),
        Some("w1")
    );
    // The lease held across the upgrade still holds, and its holder renews it.
    assert_eq!(
        s.lease_host("x.example", "w2", 100, 1000).expect("lease"),
        None
    );
    let mut held = HostLease {
        host: "x.example".into(),
        worker: "w1".into(),
        epoch: 3,
    };
    assert!(s.renew_host(&mut held, 200, 1000).expect("renew"));
}

#[test]
fn a_postgres_error_names_the_variable_never_the_url() {
    let pg = TempPostgres::start();
    let url = secrecy::SecretString::from(format!(
        "postgres://mcpprobe:s3cret-pw@127.0.0.1:{}/no_such_database",
        pg.port()
    ));
    let Err(e) = PgStore::connect(&url, VAR) else {
        panic!("there is no such database")
    };
    let text = e.to_string();
    assert!(
        text.contains(VAR) && text.contains("no_such_database"),
        "{text}"
    );
    assert!(
        !text.contains("s3cret-pw") && !text.contains("postgres://"),
        "{text}"
    );
}
