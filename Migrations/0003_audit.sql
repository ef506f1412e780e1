-- Audit: tamper evidence, refused commands, and samples of what was served.

-- Each event's hash chains it to the previous event of its channel (see EventStore/HashChain.swift for the exact
-- bytes hashed). Events written before this migration have no hash; `cueline verify` reports them as unchained.
ALTER TABLE cueline_events ADD COLUMN hash text;
ALTER TABLE cueline_streams ADD COLUMN last_hash text;

-- Commands that were refused: who tried what and why. Never part of the schedule; append-only like the log.
CREATE TABLE cueline_refusals (
    id bigserial PRIMARY KEY,
    channel text NOT NULL,
    command_id text NOT NULL,
    command text NOT NULL,
    request json NOT NULL,
    actor text NOT NULL,
    source text NOT NULL,
    reason text NOT NULL,
    decided_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX cueline_refusals_channel ON cueline_refusals (channel, decided_at);
CREATE TRIGGER cueline_refusals_immutable BEFORE UPDATE OR DELETE ON cueline_refusals
    FOR EACH ROW EXECUTE FUNCTION cueline_reject_change();
CREATE TRIGGER cueline_refusals_no_truncate BEFORE TRUNCATE ON cueline_refusals
    FOR EACH STATEMENT EXECUTE FUNCTION cueline_reject_change();

-- Digests of playlists as served, sampled by the servers, so that `cueline verify` can prove that replay with the
-- recorded renderer version still gives the same bytes.
CREATE TABLE cueline_render_samples (
    channel text NOT NULL,
    tick timestamptz NOT NULL,
    rendition text NOT NULL,
    renderer_version integer NOT NULL,
    sha256 text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (channel, tick, rendition)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        GRANT SELECT, INSERT ON cueline_refusals, cueline_render_samples TO cueline_app;
        GRANT USAGE ON SEQUENCE cueline_refusals_id_seq TO cueline_app;
    END IF;
END
$$;
