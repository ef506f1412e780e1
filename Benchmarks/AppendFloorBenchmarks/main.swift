// The floor of a command's path on this stack (issue 12: appends): Hummingbird 2 and libpq on each connection's own
// thread (the Postgres module, as `cueline serve` uses them), one durable single-row INSERT per POST, prepared once per
// connection; nothing is decoded, decided, encoded, checked or hashed. `scripts/bench/bench.sh` drives it with wrk
// exactly as it drives `cueline serve`'s command route, beside pgbench's insert, in the same run: what is left between
// this and `POST /channels/{channel}/commands` is Cueline's own work; what is between this and pgbench is the stack's.
//
//   DATABASE_URL=… cueline-append-floor PORT     (the table: bench_rows (id bigserial, payload text), as bench.sh makes)
//   POST /rows: one INSERT per request; POST /empty: the same request read and answered, no database.
import Foundation
import Hummingbird
import Postgres

guard CommandLine.arguments.count == 2, let port = Int(CommandLine.arguments[1]),
    let url = ProcessInfo.processInfo.environment["DATABASE_URL"]
else {
    FileHandle.standardError.write(Data("usage: DATABASE_URL=... cueline-append-floor PORT\n".utf8))
    exit(2)
}
// As `cueline serve`'s pool: 8 connections at most, two kept open.
let pool = PostgresPool(url: url, maximumConnections: 8, keepIdle: 2)
let router = Router()
router.post("/rows") { request, _ -> HTTPResponse.Status in
    let body = try await request.body.collect(upTo: 64 * 1024)
    let payload = String(buffer: body)
    try await pool.withConnection { connection in
        try await connection.query("INSERT INTO bench_rows (payload) VALUES (\(payload))", preparedAs: "floor_insert")
    }
    return .created
}
// HTTP alone: the same POST read and answered, no database (scripts/bench/bench-append-bound.sh).
router.post("/empty") { request, _ -> HTTPResponse.Status in
    _ = try await request.body.collect(upTo: 64 * 1024)
    return .created
}
let app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "floor"))
try await app.runService()
