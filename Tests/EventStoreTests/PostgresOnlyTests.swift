import EventStore
import HLS
import Postgres
import Schedule
import TestSupport
import Foundation
import Synchronization
import Testing

@Suite("PostgreSQL event log", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct PostgresOnlyTests {
    @Test(
        "UPDATE, DELETE and TRUNCATE on the log are refused",
        arguments: [
            "UPDATE cueline_events SET actor = 'mallory' WHERE channel = $1",
            "DELETE FROM cueline_events WHERE channel = $1",
            "TRUNCATE cueline_events",
            "UPDATE cueline_commands SET request_hash = 'x' WHERE channel = $1",
            "DELETE FROM cueline_commands WHERE channel = $1",
            "TRUNCATE cueline_commands CASCADE",
        ])
    func immutable(statement: String) async throws {
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel()
        let appended = try await store.append(makeRequest(channel: channel, expected: .noStream))
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        do {
            try await connection.query(
                PostgresQuery(sql: statement, binds: statement.contains("$1") ? [channel.rawValue] : []))
            Issue.record("\(statement) succeeded on the append-only log")
        } catch let error as PostgresError {
            #expect(error.sqlState == "42501")
            #expect(error.message.contains("append-only"))
        }
        #expect(try await store.readStream(channel, after: 0, limit: 10) == appended.events)
    }

    /// A trigger that ends its own server process (the transaction rolls back, the client sees its connection lost)
    /// in the first `times` inserts of `channel`'s rows into `table`; `ended()` counts the rows that reached it.
    private struct ServerProcessEnder {
        let admin: PostgresConnection
        let name = "test_end_" + String(UUID().uuidString.prefix(8)).lowercased()
        let table: String

        init(_ admin: PostgresConnection, table: String, channel: ChannelID, times: Int) async throws {
            self.admin = admin
            self.table = table
            try await admin.executeScript(
                """
                CREATE SEQUENCE \(name);
                CREATE FUNCTION \(name)() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.channel = '\(channel.rawValue)' AND nextval('\(name)') <= \(times) THEN
                        PERFORM pg_terminate_backend(pg_backend_pid());
                        PERFORM pg_sleep(5);
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER \(name) BEFORE INSERT ON \(table) FOR EACH ROW EXECUTE FUNCTION \(name)();
                """)
        }

        func ended() async throws -> String? {
            try await admin.query(PostgresQuery(sql: "SELECT last_value FROM \(name)")).scalar()
        }

        func drop() async throws {
            try await admin.executeScript(
                "DROP TRIGGER \(name) ON \(table); DROP FUNCTION \(name)(); DROP SEQUENCE \(name);")
        }
    }

    @Test(
        "an append whose server process ends under it, before its commit, is sent once more on another connection and applied once"
    )
    func appendRetriedAfterLostConnection() async throws {
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel("lost")
        let admin = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { admin.close() }
        let ender = try await ServerProcessEnder(admin, table: "cueline_events", channel: channel, times: 1)
        defer { Task { try? await ender.drop() } }
        let appended = try await store.append(makeRequest(channel: channel, expected: .noStream))
        #expect(appended.events.count == 1 && appended.version == 1 && !appended.replayed)
        #expect(try await ender.ended() == "2", "the first try did not reach the insert")
        #expect(try await admin.query("SELECT count(*) FROM cueline_events WHERE channel = \(channel)").scalar() == "1")
    }

    @Test("an append lost twice is answered 'may have been written', never 'nothing was written'")
    func appendLostTwice() async throws {
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel("lost2")
        let admin = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { admin.close() }
        let ender = try await ServerProcessEnder(admin, table: "cueline_events", channel: channel, times: 2)
        defer { Task { try? await ender.drop() } }
        do {
            _ = try await store.append(makeRequest(channel: channel, expected: .noStream))
            Issue.record("an append lost twice succeeded")
        } catch StoreError.unknownOutcome(let message) {
            #expect(message.contains("connection"), "\(message)")
        }
        #expect(try await ender.ended() == "2", "both calls reached the insert")
    }

    @Test("after a lost call, the record of an earlier request under the same command id is a replay, or a reused id")
    func lostCallFindsEarlierRecord() async throws {
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel("lostrec")
        let first = try await store.append(makeRequest(channel: channel, expected: .any, commandID: "k1"))
        let admin = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { admin.close() }
        // The stream's row is inserted (ON CONFLICT DO NOTHING) before the idempotency record is read: every call ends there.
        let ender = try await ServerProcessEnder(admin, table: "cueline_streams", channel: channel, times: 1)
        defer { Task { try? await ender.drop() } }
        // The same request sent again later (another decision time): the earlier events, answered as a replay.
        var again = makeRequest(channel: channel, expected: .any, commandID: "k1")
        again.command.decidedAt = first.events[0].decidedAt.adding(milliseconds: 500)
        let replayed = try await store.append(again)
        #expect(try await ender.ended() == "1", "the call did not reach the stream's row")
        #expect(replayed.replayed && replayed.events == first.events && replayed.version == 1)
        // Another request under the same command id: refused as reused (409), not "may have been written".
        try await ender.drop()
        let reused = try await ServerProcessEnder(admin, table: "cueline_streams", channel: channel, times: 1)
        defer { Task { try? await reused.drop() } }
        await #expect(throws: StoreError.commandIDReused(commandID: "k1")) {
            try await store.append(
                makeRequest(
                    channel: channel, expected: .any, events: [NewEvent(type: "Noted", payload: #"{"n":2}"#)],
                    commandID: "k1"))
        }
        #expect(try await reused.ended() == "1")
        #expect(try await admin.query("SELECT count(*) FROM cueline_events WHERE channel = \(channel)").scalar() == "1")
    }

    @Test("the service role can append and read but cannot alter the log, even by disabling the triggers")
    func leastPrivilege() async throws {
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query("SET ROLE cueline_app")
        let channel = uniqueChannel()
        let appended = try await PostgresEventStore.append(
            makeRequest(channel: channel, expected: .noStream), on: connection)
        #expect(appended.events.count == 1)
        #expect(
            try await connection.query("SELECT count(*) FROM cueline_events WHERE channel = \(channel)").scalar() == "1"
        )
        for statement in [
            "ALTER TABLE cueline_events DISABLE TRIGGER ALL", "DROP TABLE cueline_events",
            "UPDATE cueline_events SET actor = 'x'",
            "DELETE FROM cueline_commands", "UPDATE cueline_streams SET version = 0",
            "UPDATE cueline_log_head SET position = 0",
            "INSERT INTO cueline_commands (command_id, channel, request_hash, result_version) VALUES ('x', 'x', 'x', 0)",
        ] {
            do {
                try await connection.query(PostgresQuery(sql: statement))
                Issue.record("cueline_app could run \(statement)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42501" || error.sqlState == "42P01", "\(statement): \(error)")
            }
        }
    }

    @Test(
        "the red team's forgery fails: as the service role, a backdated event with a recomputed hash cannot be written")
    func forgeryAsServiceRole() async throws {
        // Issue 11, defect 6: cueline_app could INSERT a backdated event with a hash it computed, UPDATE
        // cueline_streams to match, and `cueline verify` passed.
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel()
        let first = try await store.append(makeRequest(channel: channel, expected: .noStream))
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query("SET ROLE cueline_app")
        let head = try await store.headPosition()
        var forged = RecordedEvent(
            position: head + 1, channel: channel, version: 2, type: "Noted", schemaVersion: 1, payload: #"{"n":2}"#,
            decidedAt: first.events[0].decidedAt.adding(milliseconds: -60_000), actor: "mallory", source: "test",
            commandID: "forged", reason: nil)
        forged.hash = HashChain.hash(previous: first.events[0].hash!, event: forged)
        do {
            try await connection.query(
                """
                INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor, source, \
                command_id, reason, hash) VALUES (\(forged.position), \(channel), 2, 'Noted', 1, \(forged.payload)::json, \
                \(forged.decidedAt.iso8601)::timestamptz, 'mallory', 'test', 'forged', NULL, \(forged.hash!))
                """)
            Issue.record("cueline_app inserted an event directly")
        } catch let error as PostgresError {
            #expect(error.sqlState == "42501", "\(error)")
        }
        // Through the append function, a backdated decision time is refused by the database clock.
        var request = makeRequest(channel: channel, expected: .exactly(1), commandID: "forged-2", actor: "mallory")
        request.command.decidedAt = first.events[0].decidedAt.adding(milliseconds: -60_000)
        await #expect(throws: StoreError.self) { try await PostgresEventStore.append(request, on: connection) }
        // And the log is as it was: one event, chained.
        let events = try await store.readStream(channel, after: 0, limit: 10)
        #expect(events == first.events)
        #expect(HashChain.verify(events).firstBreak == nil)
    }

    @Test("as the service role, refusals and render samples cannot be backdated or dated outside the calendar")
    func auditRecordsAsServiceRole() async throws {
        // Red team: a refusal dated 2020 showed in `cueline log`, and a sample dated 'infinity' made verify abort.
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query("SET ROLE cueline_app")
        let channel = uniqueChannel()
        for statement in [
            "INSERT INTO cueline_refusals (channel, command_id, command, request, actor, source, reason, decided_at) VALUES ('\(channel)', 'x', 'c', '{}', 'a', 's', 'r', '2020-01-01')",
            "INSERT INTO cueline_render_samples (channel, tick, rendition, renderer_version, sha256) VALUES ('\(channel)', 'infinity', 'r', 1, 'x')",
        ] {
            do {
                try await connection.query(PostgresQuery(sql: statement))
                Issue.record("cueline_app could run \(statement)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42501", "\(error)")
            }
        }
        let store = PostgresEventStore(pool: PostgresPool(url: TestDatabase.url!))
        // Through the functions: a backdated refusal is dated by the database clock, a far tick is not recorded.
        try await connection.query(
            "SELECT cueline_record_refusal(\(channel), 'x', 'c', '{}'::json, 'a', 's', 'r', 1577836800000)")
        let refusals = try await PostgresRefusalStore(pool: store.pool).refusals(of: channel)
        #expect(refusals.count == 1 && refusals[0].decidedAt.milliseconds > wallClockMilliseconds() - 60_000)
        try await connection.query(
            "SELECT cueline_record_samples(\(#"[{"channel":"\#(channel)","tick_ms":9223372036854775807,"rendition":"r","renderer_version":1,"sha256":"\#(String(repeating: "a", count: 64))"}]"#)::json)"
        )
        #expect(try await PostgresRenderSampleStore(pool: store.pool).renderSamples(of: channel, limit: 10).isEmpty)
    }

    @Test(
        "the watermark writes nothing (no transaction id, no WAL, no fsync) and still waits for an append holding the log head"
    )
    func watermarkWithoutWrites() async throws {
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query("SET ROLE cueline_app")
        // A row lock (the former SELECT … FOR SHARE) takes a transaction id: every poll was a durable commit.
        let xid = try await connection.withTransaction { connection in
            _ = try await connection.query("SELECT head FROM cueline_watermark()")
            return try await connection.query("SELECT coalesce(txid_current_if_assigned()::text, 'none')").scalar()
        }
        #expect(xid == "none")

        // An append in flight (it has moved the head, not committed): the watermark waits for it and sees its head.
        let appender = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { appender.close() }
        let before = try #require(
            Int64(try await connection.query("SELECT head FROM cueline_watermark()").scalar() ?? ""))
        try await appender.query("BEGIN")
        _ = try #require(
            Int64(
                try await appender.query("UPDATE cueline_log_head SET position = position RETURNING position").scalar()
                    ?? ""))
        let started = ContinuousClock.now
        async let watermark = connection.query("SELECT head FROM cueline_watermark()").scalar()
        try await Task.sleep(for: .milliseconds(300))
        try await appender.query("COMMIT")
        let head = try #require(Int64(try await watermark ?? ""))
        #expect(ContinuousClock.now - started >= .milliseconds(300), "the watermark did not wait for the open append")
        #expect(head >= before, "other tests may append meanwhile when suites run in parallel")
    }

    @Test("events of the schedule's types that contradict their decision time or shape are refused by the database")
    func checkedEvents() async throws {
        // Red team: a BreakPlaced that "aired" 5 minutes before it was decided was reported by as-run; a payload {}
        // blocked every command of the channel.
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel()
        let decided = wallClockMilliseconds() + 15_000
        let created = #"{"id":"\#(channel)"}"#
        _ = try await store.append(
            makeRequest(
                channel: channel, expected: .noStream, events: [NewEvent(type: "ChannelCreated", payload: created)],
                at: decided))
        let ghostStart = Timestamp(milliseconds: decided - 300_000).iso8601
        for payload in [
            #"{"id":"ghost","start":"\#(ghostStart)","plannedDurationMilliseconds":60000,"asset":{"uri":{"_0":"https://a.example/x.m3u8"}}}"#,
            "{}", #"{"id":"ok","start":"not a date","plannedDurationMilliseconds":60000,"asset":{}}"#, "[]",
        ] {
            await #expect(throws: StoreError.self, "\(payload)") {
                try await store.append(
                    makeRequest(
                        channel: channel, expected: .exactly(1),
                        events: [NewEvent(type: "BreakPlaced", payload: payload)], at: decided))
            }
        }
        await #expect(throws: StoreError.self) {
            try await store.append(
                makeRequest(
                    channel: channel, expected: .exactly(1),
                    events: [NewEvent(type: "ChannelCreated", payload: created)], at: decided))
        }
        #expect(try await store.version(of: channel) == 1)
    }

    @Test(
        "a NUL in any value is refused before it reaches libpq, nothing is written",
        arguments: ["commandID", "actor", "reason", "payload"])
    func nulRefused(field: String) async throws {
        // Issue 11, defect 4: values were passed as C strings, so "before\0after" was stored as "before" after a 201.
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel()
        var request = makeRequest(
            channel: channel, expected: .noStream, commandID: "c-" + UUID().uuidString, reason: "ok")
        switch field {
        case "commandID": request.command.commandID += "\u{0}tail"
        case "actor": request.command.actor = "before\u{0}after"
        case "reason": request.command.reason = "before\u{0}after"
        default: request.events[0].payload = "{\"n\":\"a\u{0}b\"}"
        }
        do {
            _ = try await store.append(request)
            Issue.record("an append with a NUL in \(field) was accepted")
        } catch let StoreError.invalidValue(message) {
            #expect(message.contains("NUL"))
        }
        #expect(try await store.version(of: channel) == 0)
    }

    @Test("control characters in actor, source, reason or command id are refused by the database itself")
    func controlCharactersRefusedByTheFunction() async throws {
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel()
        for bad in ["\u{1B}[31mred", "tab\there", "line\nbreak", "del\u{7F}"] {
            await #expect(throws: StoreError.self) {
                try await store.append(makeRequest(channel: channel, expected: .any, reason: bad))
            }
        }
        #expect(try await store.version(of: channel) == 0)
    }

    @Test("an append sends a NOTIFY hint that a listener receives; the listener's streams end with its run()")
    func notify() async throws {
        let store = TestDatabase.makeStore()
        let listener = PostgresListener(url: TestDatabase.url!, channel: PostgresEventStore.notifyChannel)
        let stream = listener.events()
        let wakeups = listener.wakeups()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await listener.run() }
            var events = stream.makeAsyncIterator()
            #expect(await events.next() == .listening)
            let channel = uniqueChannel()
            let result = try await store.append(makeRequest(channel: channel, expected: .noStream))
            let expected = "\(channel) \(result.events[0].position)"
            // Other tests append concurrently: wait for ours among the hints.
            let deadline = ContinuousClock.now + .seconds(10)
            var received = false
            while ContinuousClock.now < deadline, let event = await events.next() {
                if event == .notification(payload: expected) {
                    received = true
                    break
                }
            }
            #expect(received)
            group.cancelAll()
            // Cancelling run() ends every subscriber's stream: nothing keeps listening behind the caller's back.
            while await events.next() != nil {}
            var wakeupIterator = wakeups.makeAsyncIterator()
            var woken = 0
            while await wakeupIterator.next() != nil { woken += 1 }
            #expect(woken >= 1)
        }
        var late = listener.events().makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test("a wake-up subscriber skips the hints it says it knows, and is woken by the others")
    func skippedHints() async throws {
        let store = TestDatabase.makeStore()
        let listener = PostgresListener(url: TestDatabase.url!, channel: PostgresEventStore.notifyChannel)
        let known = uniqueChannel()
        let other = uniqueChannel()
        // Every hint but `other`'s is skipped (other tests append meanwhile); the ones seen are kept.
        let seen = Mutex<[String]>([])
        let wakeups = listener.wakeups(skipping: { payload in
            seen.withLock { $0.append(payload) }
            return !payload.hasPrefix("\(other) ")
        })
        let woken = Mutex(0)
        let consumer = Task { for await _ in wakeups { woken.withLock { $0 += 1 } } }
        let runner = Task { try await listener.run() }
        defer { runner.cancel(); consumer.cancel() }
        func waitFor(_ condition: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        }
        try await waitFor { woken.withLock { $0 } == 1 }  // LISTEN in place
        #expect(woken.withLock { $0 } == 1)
        let skipped = try await store.append(makeRequest(channel: known, expected: .noStream))
        let skippedHint = "\(known) \(skipped.events[0].position)"
        try await waitFor { seen.withLock { $0.contains(skippedHint) } }
        #expect(seen.withLock { $0.contains(skippedHint) })
        // The skipped hint woke no one.
        try await Task.sleep(for: .milliseconds(300))
        #expect(woken.withLock { $0 } == 1)
        let appended = try await store.append(makeRequest(channel: other, expected: .noStream))
        try await waitFor { woken.withLock { $0 } == 2 }
        #expect(woken.withLock { $0 } == 2)
        #expect(seen.withLock { $0.contains("\(other) \(appended.events[0].position)") })
    }

    @Test(
        "cueline_append's own transaction sends no NOTIFY (it would serialize every channel's commits); the store's hint follows the commit"
    )
    func hintAfterCommit() async throws {
        let store = TestDatabase.makeStore()
        let listener = PostgresListener(url: TestDatabase.url!, channel: PostgresEventStore.notifyChannel)
        let stream = listener.events()
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        // Cancelling run() ends the listener's streams: a hint that never comes fails the test instead of hanging it.
        let runner = Task { try await listener.run() }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(20))
            runner.cancel()
        }
        defer { watchdog.cancel(); runner.cancel() }
        do {
            var events = stream.makeAsyncIterator()
            #expect(await events.next() == .listening)
            let channel = uniqueChannel()
            // The function alone, committed on its own (autocommit): nothing for this channel may arrive.
            let direct = try await PostgresEventStore.append(
                makeRequest(channel: channel, expected: .noStream), on: connection)
            // Then through the store: its hint names the later append's position. Hints arrive in commit order, so
            // had the function notified, its payload would come first.
            let result = try await store.append(makeRequest(channel: channel, expected: .exactly(direct.version)))
            let expected = "\(channel) \(result.events[0].position)"
            var seen: [String] = []
            while let event = await events.next() {
                guard case .notification(let payload) = event, payload.hasPrefix("\(channel) ") else { continue }
                seen.append(payload)
                if payload == expected { break }
            }
            #expect(seen == [expected])
        }
    }

    @Test("a store on an unmigrated database says to run cueline migrate")
    func schemaOutdated() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let store = PostgresEventStore(pool: PostgresPool(url: url))
        await #expect(throws: StoreError.schemaOutdated(applied: 0, required: PostgresEventStore.requiredMigration)) {
            try await store.checkSchema()
        }
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        try await store.checkSchema()
    }

    @Test("an unreachable database is reported as unavailable, naming the target")
    func unreachable() async throws {
        let store = PostgresEventStore(pool: PostgresPool(url: "postgresql://postgres@127.0.0.1:1/nothing"))
        do {
            _ = try await store.headPosition()
            Issue.record("reading from a closed port succeeded")
        } catch let StoreError.unavailable(message) {
            #expect(message.contains("127.0.0.1:1"))
        }
    }
}

@Suite("PostgreSQL tokens", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct PostgresTokenScopeTests {
    @Test(
        "a stored token whose scope this build cannot read is refused and left out of lists, not widened; the other tokens keep working"
    )
    func unreadableScope() async throws {
        let store = PostgresTokenStore(pool: TestDatabase.makeStore().pool)
        let good = try await store.create(
            name: "scope-ok-\(UUID().uuidString.prefix(8).lowercased())", role: .operator, channels: [], commands: [],
            createdBy: "test")
        // An automation token scoped to a command type of a newer build: read with it dropped, it would be allowed
        // every command (an empty list means all).
        let name = "scope-new-\(UUID().uuidString.prefix(8).lowercased())"
        let secret = TokenSecret.generate()
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query(
            "INSERT INTO cueline_tokens (name, role, channels, commands, token_sha256, created_by) VALUES (\(name), 'automation', '{news}', '{skip_break}', \(TokenSecret.digest(secret)), 'test')"
        )
        let active = try await store.activeTokens()
        #expect(active[TokenSecret.digest(secret)] == nil)
        #expect(active[TokenSecret.digest(good)] != nil)
        #expect(try await store.token(digest: TokenSecret.digest(secret)) == nil)
        let listed = try await store.list()
        #expect(!listed.contains { $0.name == name } && listed.contains { $0.role == .operator })
        try await connection.query("UPDATE cueline_tokens SET revoked_at = now() WHERE name = \(name)")
    }
}
