-- Version 4 (as ../004_documents_retention_counters.sql): documents apart from the rows, the
-- running-runs index, the accepted baseline's source run, maintained counters.
CREATE TABLE run_documents (
    run           BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    report_json   TEXT NOT NULL,
    observed_json TEXT
);
INSERT INTO run_documents (run, report_json, observed_json)
    SELECT id, report_json, observed_json FROM runs WHERE report_json IS NOT NULL;
ALTER TABLE runs DROP COLUMN report_json;
ALTER TABLE runs DROP COLUMN observed_json;

CREATE INDEX runs_running ON runs(target) WHERE status = 'running';

ALTER TABLE baselines ADD COLUMN source_run BIGINT REFERENCES runs(id) ON DELETE SET NULL;

CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO counters (name, value)
    SELECT 'runs.' || status, count(*) FROM runs WHERE status <> 'running' GROUP BY status;
INSERT INTO counters (name, value)
    SELECT 'requests', coalesce(sum(requests), 0) FROM runs;
INSERT INTO counters (name, value)
    SELECT 'refusals.' || coalesce(refusal, 'unknown'), count(*) FROM runs
    WHERE status = 'refused' GROUP BY coalesce(refusal, 'unknown');
