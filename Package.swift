// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Cueline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "cueline", targets: ["cueline"])
    ],
    dependencies: [
        // Without its ConfigurationSupport trait (swift-configuration readers, not used here): less to build on 2 cores.
        // 2.28.1, the release this was built with, declares the traits (an older one may not).
        .package(
            url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        // Already in the graph through Hummingbird; named because the API target's connection limits use them.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.25.0"),
        // Outbound HTTP to ad servers and relay upstreams: a pool per host, streamed bodies with back-pressure, TLS.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // Pure: playlist model, renderer, parser, lint. Foundation only.
        .target(name: "HLS"),
        // Pure: channel config, commands, events, decide/evolve, window arithmetic.
        .target(name: "Schedule", dependencies: ["HLS", "SCTE35"]),
        // Pure: SCTE-35 splice_info_section parsing, encoding and CRC. No dependencies, so the fuzzer builds it alone.
        .target(name: "SCTE35"),
        // Pure but for XML: ad servers' answers (VAST 4.x/3.0, VMAP 1.0) read with Foundation's XMLParser (libxml2, which
        // the toolchain needs anyway), followed to the ads a break plays, and written as the interstitial asset list.
        .target(name: "Ads", dependencies: ["Schedule", "HLS"]),
        // The HTTP API's request, response and view types and their one JSON configuration: the server, the CLI
        // and the OpenAPI document share them. Foundation only.
        .target(name: "Wire", dependencies: ["Schedule", "HLS"]),
        // libpq from Debian's libpq-dev.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // SHA-256 (the hash chain, token digests, render samples) and HMAC-SHA256 (hook signatures): OpenSSL's
        // libcrypto, which libpq links already (libssl-dev comes with libpq-dev).
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The libpq driver alone: connection (its own thread), pool and LISTEN loop as services, query, rows, errors.
        .target(
            name: "Postgres",
            dependencies: [
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The message store (events by stream and position) and the small stores beside it (tokens, refusals,
        // render samples), each in PostgreSQL and in memory; migrations.
        .target(
            name: "EventStore",
            dependencies: [
                "Schedule", "Postgres",
                .product(name: "Logging", package: "swift-log"),
                "CLibCrypto",
            ]
        ),
        .target(
            name: "Projector",
            dependencies: [
                "Schedule", "HLS", "EventStore", "Ads",
                // ByteBuffer: playlists are kept encoded as the bodies served.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "API",
            dependencies: [
                "Schedule", "HLS", "EventStore", "Projector", "SCTE35", "Wire", "Postgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            resources: [.copy("Console")]  // the operator console's static files (issue 15)
        ),
        .executableTarget(
            name: "cueline",
            dependencies: [
                "HLS", "Schedule", "EventStore", "Projector", "API", "Wire",
                "Postgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The server's own event loop group when its loops are pinned to CPUs (EventLoops.swift).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Exports the benchmark's own malloc and friends, which count allocations (Allocations.swift).
        .executableTarget(
            name: "cueline-bench", dependencies: ["HLS", "Schedule"], path: "Benchmarks/HLSBenchmarks",
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic"])]),
        .executableTarget(
            name: "cueline-replay-bench", dependencies: ["HLS", "Schedule", "Projector", "EventStore", "Postgres"],
            path: "Benchmarks/ReplayBenchmarks"),
        .executableTarget(
            name: "cueline-scale-bench",
            dependencies: [
                "HLS", "Schedule", "Projector", "EventStore", .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Benchmarks/ScaleBenchmarks"),
        .executableTarget(
            name: "cueline-retention-bench", dependencies: ["HLS", "Schedule", "Projector"],
            path: "Benchmarks/RetentionBenchmarks"),
        .executableTarget(
            name: "cueline-append-floor",
            dependencies: ["Postgres", .product(name: "Hummingbird", package: "hummingbird")],
            path: "Benchmarks/AppendFloorBenchmarks"),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(
            name: "ScheduleTests", dependencies: ["Schedule", "HLS", "SCTE35", "TestSupport"], exclude: ["Fixtures"]),
        .target(
            name: "TestSupport", dependencies: ["EventStore", "Postgres", "HLS", "Schedule"], path: "Tests/TestSupport"),
        .testTarget(
            name: "EventStoreTests", dependencies: ["EventStore", "Postgres", "Schedule", "HLS", "TestSupport"]),
        .testTarget(
            name: "ProjectorTests",
            dependencies: ["Projector", "Schedule", "EventStore", "Postgres", "HLS", "TestSupport"]),
        .testTarget(name: "AdsTests", dependencies: ["Ads", "Schedule", "HLS"], resources: [.copy("Fixtures")]),
        .testTarget(name: "SCTE35Tests", dependencies: ["SCTE35", "Schedule", "HLS", "TestSupport"]),
        .testTarget(name: "WireTests", dependencies: ["Wire", "API", "Schedule", "HLS"]),
        // The HTTP API in process (RouterClient: requests handed to the router, no socket) over the in-memory stores.
        .testTarget(
            name: "APITests",
            dependencies: [
                "API", "EventStore", "Projector", "Schedule", "HLS", "TestSupport", "Postgres",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport", "EventStore", "Postgres", "HLS"]),
    ]
)
