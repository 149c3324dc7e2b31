-- The daemon's state, version 1. Times are unix milliseconds written by the code.
CREATE TABLE targets (
    name      TEXT PRIMARY KEY,
    url       TEXT NOT NULL,
    every_ms  INTEGER NOT NULL,
    -- 0 once the target left the configuration (its history stays).
    active    INTEGER NOT NULL DEFAULT 1,
    added_ms  INTEGER NOT NULL
);

CREATE TABLE baselines (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    target      TEXT NOT NULL REFERENCES targets(name),
    json        TEXT NOT NULL,
    accepted_ms INTEGER NOT NULL
);
CREATE INDEX baselines_target ON baselines(target, id DESC);

CREATE TABLE runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    target           TEXT NOT NULL REFERENCES targets(name),
    -- The schedule slot (its start, unix ms) this run is for.
    slot             INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'complete', 'refused', 'incomplete', 'interrupted')),
    started_ms       INTEGER NOT NULL,
    finished_ms      INTEGER,
    lease_until      INTEGER,
    lease_epoch      INTEGER NOT NULL DEFAULT 1,
    exit_code        INTEGER,
    critical         INTEGER NOT NULL DEFAULT 0,
    high             INTEGER NOT NULL DEFAULT 0,
    medium           INTEGER NOT NULL DEFAULT 0,
    low              INTEGER NOT NULL DEFAULT 0,
    info             INTEGER NOT NULL DEFAULT 0,
    tool_list_sha256 TEXT,
    requests         INTEGER NOT NULL DEFAULT 0,
    reason           TEXT,
    -- For refused runs: opted_out, ownership or other (the gate-refusal metric).
    refusal          TEXT,
    duration_ms      INTEGER,
    report_json      TEXT,
    observed_json    TEXT,
    compared_with    INTEGER REFERENCES baselines(id)
);
-- Exactly once: one run per (target, slot), an interrupted one aside (its slot was released).
CREATE UNIQUE INDEX runs_one_per_slot ON runs(target, slot) WHERE status != 'interrupted';
CREATE INDEX runs_by_target ON runs(target, id DESC);
