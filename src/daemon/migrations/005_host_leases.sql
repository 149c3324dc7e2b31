-- Version 5: politeness across a fleet (issue 25). A worker leases a host before it scans any
-- target on it, so no two workers scan one host at once and the per-host rate holds fleet-wide.
-- A lease with an expiry and an epoch, like a run's: renewed while the worker holds it, taken
-- over by another worker once it lapsed.
CREATE TABLE host_leases (
    host        TEXT PRIMARY KEY,
    worker      TEXT NOT NULL,
    lease_until INTEGER NOT NULL,
    epoch       INTEGER NOT NULL
);

-- Which worker ran each run (a fleet's operator asks; the fleet test checks hosts with it).
ALTER TABLE runs ADD COLUMN worker TEXT;
