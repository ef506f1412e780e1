-- A role for the running service: it may append to and read the log, never alter it. The tables stay owned by
-- the role that migrates, so the service cannot disable the immutability triggers or drop anything.
-- The role is created where the migrating role may create roles; the grants are applied whenever it exists.
-- Give it a login with: ALTER ROLE cueline_app LOGIN PASSWORD '…';
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app')
       AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolcreaterole OR rolsuper)) THEN
        CREATE ROLE cueline_app NOLOGIN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        GRANT SELECT, INSERT ON cueline_events, cueline_commands TO cueline_app;
        GRANT SELECT, INSERT, UPDATE ON cueline_streams, cueline_log_head TO cueline_app;
        GRANT SELECT ON cueline_migrations TO cueline_app;
    END IF;
END
$$;

-- Audit queries (as-run, replay by time) read a channel's events by decision time.
CREATE INDEX cueline_events_channel_decided ON cueline_events (channel, decided_at);
