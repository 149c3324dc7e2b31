-- Version 4: the store made right before it is shared (issue 25).
--
-- Reports and observed states in a table of their own: every listing of runs read about 4 KB of
-- report per row (overflow pages) to reach the next row. A run's documents are deleted with it.
CREATE TABLE run_documents (
    run           INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    report_json   TEXT NOT NULL,
    observed_json TEXT
);
INSERT INTO run_documents (run, report_json, observed_json)
    SELECT id, report_json, observed_json FROM runs WHERE report_json IS NOT NULL;
ALTER TABLE runs DROP COLUMN report_json;
ALTER TABLE runs DROP COLUMN observed_json;

-- The runs still running, found without walking a target's history (claim, held slots).
CREATE INDEX runs_running ON runs(target) WHERE status = 'running';

-- Which run an accepted baseline came from (retention never deletes the accepted baseline's).
ALTER TABLE baselines ADD COLUMN source_run INTEGER REFERENCES runs(id) ON DELETE SET NULL;

-- What /metrics reports, maintained as runs finish (not counted over the history at each
-- scrape, and kept when retention deletes old runs: a counter never goes down).
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO counters (name, value)
    SELECT 'runs.' || status, count(*) FROM runs WHERE status != 'running' GROUP BY status;
INSERT INTO counters (name, value)
    SELECT 'requests', coalesce(sum(requests), 0) FROM runs;
INSERT INTO counters (name, value)
    SELECT 'refusals.' || coalesce(refusal, 'unknown'), count(*) FROM runs
    WHERE status = 'refused' GROUP BY coalesce(refusal, 'unknown');
