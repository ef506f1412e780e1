-- The append-only event log. See shared/design.md, "The event log".

-- One row holding the last global position handed out. Every append updates it last, holding its row lock
-- until commit, so positions become visible strictly in order: a reader can never pass an uncommitted one.
CREATE TABLE cueline_log_head (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    position bigint NOT NULL CHECK (position >= 0)
);
INSERT INTO cueline_log_head (id, position) VALUES (true, 0);

-- One row per channel stream: its current version. Locked (FOR UPDATE) by every append to that channel.
CREATE TABLE cueline_streams (
    channel text PRIMARY KEY,
    version bigint NOT NULL CHECK (version >= 0)
);

CREATE TABLE cueline_events (
    position bigint PRIMARY KEY CHECK (position > 0),
    channel text NOT NULL,
    version bigint NOT NULL CHECK (version > 0),
    type text NOT NULL,
    schema_version integer NOT NULL,
    payload json NOT NULL,
    decided_at timestamptz NOT NULL,
    actor text NOT NULL,
    source text NOT NULL,
    command_id text NOT NULL,
    reason text,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT cueline_events_stream_version UNIQUE (channel, version)
);
CREATE INDEX cueline_events_command ON cueline_events (command_id);

-- Every command ever applied, with the hash of its request: a retry with the same id and request returns the
-- original result; the same id with another request is refused.
CREATE TABLE cueline_commands (
    command_id text PRIMARY KEY,
    channel text NOT NULL,
    request_hash text NOT NULL,
    result_version bigint NOT NULL,
    first_position bigint,
    last_position bigint,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION cueline_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'correct a mistake by appending a new event';
END;
$$;

CREATE TRIGGER cueline_events_immutable BEFORE UPDATE OR DELETE ON cueline_events
    FOR EACH ROW EXECUTE FUNCTION cueline_reject_change();
CREATE TRIGGER cueline_events_no_truncate BEFORE TRUNCATE ON cueline_events
    FOR EACH STATEMENT EXECUTE FUNCTION cueline_reject_change();
CREATE TRIGGER cueline_commands_immutable BEFORE UPDATE OR DELETE ON cueline_commands
    FOR EACH ROW EXECUTE FUNCTION cueline_reject_change();
CREATE TRIGGER cueline_commands_no_truncate BEFORE TRUNCATE ON cueline_commands
    FOR EACH STATEMENT EXECUTE FUNCTION cueline_reject_change();
