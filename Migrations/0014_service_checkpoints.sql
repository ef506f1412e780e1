-- The server writes replay checkpoints itself (issue 34, item 7).
--
-- Until now only the operator's role wrote checkpoints (`cueline replay`, `cueline checkpoint` from a timer), so the
-- first replay of an instant of a long log with no checkpoint yet folded it all: 1.28 s for a year (109,501 events).
-- The running service now writes one every 1,000 events of a channel, as it folds them, off the hot path.
--
-- A checkpoint is trusted only as far as the role that wrote it: each row records that role in `written_by`, filled
-- by the database (the service may insert every other column, not this one, and may neither update nor delete a
-- row), `cueline replay` names the checkpoint it started from and its writer, and `cueline verify` re-folds the log
-- at every checkpoint and fails on one that differs from the fold. Rows written before this migration were written
-- by the operator's tools, with the migrating role's rights: they are recorded as the role that migrates.
ALTER TABLE cueline_snapshots ADD COLUMN written_by text NOT NULL DEFAULT current_user;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        GRANT INSERT (channel, version, chain_hash, latest_decided_ms, format, state) ON cueline_snapshots
            TO cueline_app;
    END IF;
END
$$;
