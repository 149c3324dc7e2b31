-- Version 3: the ownership proof each run relied on (SPEC §8.1: the store holds proofs). The
-- proof files `mcpprobe verify` writes in the state folder stay what the gate reads before every
-- run; this records which proof that was: its method, host and, for a stored (DNS-TXT) proof,
-- when it was verified and when it expires. Never the token.
CREATE TABLE proofs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    -- 'local' (the host resolves only to loopback) or 'dns-txt'.
    method      TEXT NOT NULL,
    host        TEXT NOT NULL,
    verified_ms INTEGER,
    expires_ms  INTEGER
);
-- One row per proof, however many runs relied on it (a local proof has no times).
CREATE UNIQUE INDEX proofs_one ON proofs(method, host, coalesce(verified_ms, -1), coalesce(expires_ms, -1));
-- Which proof a run relied on: a table of its own, not a column added at the end of the run's
-- row, behind its report and observed state (megabytes in overflow pages that every listing of
-- runs would have to walk through to reach it).
CREATE TABLE run_proofs (
    run   INTEGER PRIMARY KEY REFERENCES runs(id),
    proof INTEGER NOT NULL REFERENCES proofs(id)
);
CREATE INDEX run_proofs_by_proof ON run_proofs(proof);
