-- Each target points at its newest run, so "the latest run of every target" is one join over
-- the targets (not a GROUP BY over a history that grows with every run).
ALTER TABLE targets ADD COLUMN latest_run INTEGER REFERENCES runs(id);
UPDATE targets SET latest_run = (SELECT max(id) FROM runs WHERE runs.target = targets.name);
