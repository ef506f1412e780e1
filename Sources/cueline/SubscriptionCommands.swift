import ArgumentParser
import EventStore
import Foundation
import Schedule

/// `cueline subscription create|list|delete`: signed notifications out (docs/notifications.md), managed directly in
/// the database by the operator's role.
struct SubscriptionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscription",
        abstract: "Create, list and delete notification subscriptions.",
        discussion: """
            A subscription receives JSON POSTs of what was commanded (placed, limited, cancelled, refused) and what happened on
            the timeline (on-air, ended-early, aired, removed), signed like feed hooks: X-Cueline-Timestamp,
            X-Cueline-Signature: sha256=<HMAC-SHA256 of "<timestamp>.<body>">, and X-Cueline-Delivery (the same at
            every retry). Delivery starts with the facts after the subscription's creation.
            """,
        subcommands: [Create.self, List.self, Delete.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a subscription and print its signing secret.")

        @Argument(help: "The subscription's name (a-z, 0-9, '.', '_', '-').")
        var name: String

        @Option(help: "Where deliveries are POSTed (http or https).")
        var url: String

        @Option(name: .customLong("channel"), help: "A channel to notify about (repeat; default every channel).")
        var channels: [String] = []

        @Option(
            name: .customLong("events"),
            help: "Kinds of fact to send (comma-separated or repeated; default all): \(NotificationKind.names).")
        var events: [String] = []

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            var channelIDs: [ChannelID] = []
            for text in channels {
                guard let channel = ChannelID(text) else {
                    throw ValidationError("--channel \(text.debugDescription) must be \(Identifier.rule)")
                }
                if !channelIDs.contains(channel) { channelIDs.append(channel) }
            }
            var kinds: [NotificationKind] = []
            for text in events.flatMap({ $0.split(separator: ",") }) {
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                guard let kind = NotificationKind(rawValue: trimmed) else {
                    throw ValidationError(
                        "--events \(trimmed.debugDescription) is not a kind of fact; use \(NotificationKind.names)")
                }
                if !kinds.contains(kind) { kinds.append(kind) }
            }
            do {
                try Subscription.validate(name: name, url: url)
            } catch {
                throw ValidationError(error.description)
            }
            let store = PostgresSubscriptionStore(pool: try await openStore(database).pool)
            let created = try await store.create(
                name: name, url: url, channels: channelIDs, events: kinds,
                createdBy: ProcessInfo.processInfo.environment["USER"] ?? "cli")
            if json {
                struct Created: Encodable {
                    var subscription: Subscription
                    var secret: String
                }
                try printJSON(Created(subscription: created, secret: created.secret))
            } else {
                print(created.secret)
                FileHandle.standardError.write(
                    Data(
                        "subscription \(name) created; its signing secret is printed above (kept for signing; verify X-Cueline-Signature with it)\n"
                            .utf8))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List subscriptions (never their secrets).")

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let subscriptions = try await PostgresSubscriptionStore(pool: try await openStore(database).pool).list()
            if json {
                try printJSON(subscriptions)
                return
            }
            print(
                table(
                    ["NAME", "URL", "CHANNELS", "EVENTS", "CREATED", "BY"],
                    subscriptions.map { subscription in
                        [
                            subscription.name, subscription.url,
                            subscription.channels.isEmpty
                                ? "all" : subscription.channels.map(\.rawValue).joined(separator: ","),
                            subscription.events.isEmpty
                                ? "all" : subscription.events.map(\.rawValue).joined(separator: ","),
                            subscription.createdAt.iso8601, subscription.createdBy,
                        ]
                    }))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a subscription and its cursors; deliveries to it stop within seconds.")

        @Argument(help: "The subscription's name.")
        var name: String

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            try await PostgresSubscriptionStore(pool: try await openStore(database).pool).delete(name: name)
            print("subscription \(name) deleted")
        }
    }
}
