-- Signed notifications out (issue 33): subscriptions, a durable cursor per subscription and channel, and the lease
-- that makes one instance at a time the one that delivers (docs/notifications.md).
--
-- A subscription is created and deleted by the operator's role (`cueline subscription create|delete`) or, over the
-- admin API (`/subscriptions`, an operator token for every channel), by the service's role, which may insert and
-- delete rows but never change one (a subscription's URL or secret is replaced by deleting and creating it). The
-- service reads the secret: it signs every delivery with it (HMAC-SHA256), so it is kept as given, not as a digest.
CREATE TABLE cueline_subscriptions (
    name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    url text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
    -- Empty: every channel.
    channels text[] NOT NULL DEFAULT '{}',
    -- Empty: every kind of fact.
    events text[] NOT NULL DEFAULT '{}' CHECK (events <@ ARRAY['placed', 'limited', 'cancelled', 'on-air',
        'ended-early', 'aired', 'removed']::text[]),
    secret text NOT NULL CHECK (length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by text NOT NULL
);

-- The last fact delivered per subscription and channel, by the fact's order key (at_ms, position, rank): facts of a
-- channel are delivered in that order, and only those after the cursor are sent again after a restart or takeover.
-- A channel without a row starts at the subscription's creation: facts ordered after created_at.
CREATE TABLE cueline_subscription_cursors (
    subscription text NOT NULL REFERENCES cueline_subscriptions (name) ON DELETE CASCADE,
    channel text NOT NULL,
    at_ms bigint NOT NULL,
    position bigint NOT NULL,
    rank integer NOT NULL,
    delivered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (subscription, channel)
);

-- One row: the instance that delivers (holder), until when (expires_at), and a fencing token that grows at every
-- takeover. A cursor moves only in a statement that finds the lease held by the mover, with its token, unexpired.
CREATE TABLE cueline_notification_lease (
    id integer PRIMARY KEY CHECK (id = 1),
    holder text NOT NULL DEFAULT '',
    token bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO cueline_notification_lease (id) VALUES (1);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        GRANT SELECT, DELETE ON cueline_subscriptions TO cueline_app;
        GRANT INSERT (name, url, channels, events, secret, created_by) ON cueline_subscriptions TO cueline_app;
        GRANT SELECT, INSERT, UPDATE ON cueline_subscription_cursors TO cueline_app;
        GRANT SELECT, UPDATE (holder, token, expires_at) ON cueline_notification_lease TO cueline_app;
    END IF;
END
$$;
