-- Replay checkpoints: a channel's folded hot state (ChannelSnapshot, JSON) after the events up to `version`, so that
-- `cueline replay --at T` on a long log folds only the events after the latest checkpoint in effect at T instead of
-- the whole log (a year of one break every ~15 minutes is ~110,000 events: reading and decoding them all takes
-- about a second; from a checkpoint, a few hundred).
--
-- A checkpoint is a cache of the log, never a source of truth: it records the hash of the log's event at `version`
-- (which chains every event before it) and replay uses it only while the log holds that hash at that version, only
-- for instants at or after `latest_decided_ms`, and only when re-applying it reproduces it exactly; otherwise it
-- folds the log. Rows may be deleted at any time (nothing is lost: they are rebuilt from the log).
-- Written by `cueline replay` (the operator's tool, with the migrating role's rights) every 1,000 events while it
-- folds a log past its latest checkpoint: the first replay of a long log pays the full fold once, later ones do not.
-- The service role may read them, not write them.
CREATE TABLE cueline_snapshots (
    channel text NOT NULL,
    version bigint NOT NULL CHECK (version > 0),
    chain_hash text,
    latest_decided_ms bigint NOT NULL,
    format integer NOT NULL,
    state text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (channel, version)
);
CREATE INDEX cueline_snapshots_decided ON cueline_snapshots (channel, latest_decided_ms);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        GRANT SELECT ON cueline_snapshots TO cueline_app;
    END IF;
END
$$;
