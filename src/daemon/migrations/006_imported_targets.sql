-- Version 6: targets managed at fleet scale (issue 25). A target is either written in the
-- configuration file ('config', made so at each start by sync_targets) or imported ('import':
-- `mcpprobe daemon targets import`, `POST /targets`), with its definition as JSON: the keys of a
-- `[[targets]]` table (token_env names a variable; never a token). A start deactivates only the
-- configuration's targets that left the file; a name both in the file and imported is the
-- file's (its spec is dropped).
ALTER TABLE targets ADD COLUMN source TEXT NOT NULL DEFAULT 'config' CHECK (source IN ('config', 'import'));
ALTER TABLE targets ADD COLUMN spec TEXT;
-- What every scheduler pass reads (at most every 5 s): the listed imported targets.
CREATE INDEX targets_imported ON targets(name) WHERE source = 'import' AND active = 1;
