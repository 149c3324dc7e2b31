-- Each target points at its newest run (as ../002_latest_run.sql).
ALTER TABLE targets ADD COLUMN latest_run BIGINT REFERENCES runs(id);
UPDATE targets SET latest_run = (SELECT max(id) FROM runs WHERE runs.target = targets.name);
