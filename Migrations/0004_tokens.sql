-- API tokens: bearer tokens for the HTTP API, stored as the SHA-256 of the token (tokens are 256 random bits,
-- so a plain digest cannot be reversed). The token itself is shown once, by `cueline token create`.
--   operator   every command on every channel (or the listed channels), and every read
--   automation only the listed command types on the listed channels, and reads of those channels
--   viewer     reads only (schedule, events, as-run, replay)
-- Revoking sets revoked_at; rows are never deleted, so the actor names in the log stay explained.
CREATE TABLE cueline_tokens (
    name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    role text NOT NULL CHECK (role IN ('operator', 'automation', 'viewer')),
    channels text[] NOT NULL DEFAULT '{}',
    commands text[] NOT NULL DEFAULT '{}',
    token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by text NOT NULL,
    revoked_at timestamptz,
    CHECK (role = 'automation' OR commands = '{}'),
    CHECK (role <> 'automation' OR channels <> '{}')
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        GRANT SELECT ON cueline_tokens TO cueline_app;
    END IF;
END
$$;
