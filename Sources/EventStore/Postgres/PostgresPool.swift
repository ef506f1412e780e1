/// A small pool of connections, lent to one task at a time through a closure.
public actor PostgresPool {
    public nonisolated let url: String
    private let maximumConnections: Int
    private var idle: [PostgresConnection] = []
    private var open = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// - Parameters:
    ///   - url: a `postgresql://` URL or libpq `key=value` string; empty means libpq's `PG*` variables.
    ///   - maximumConnections: how many connections may be open at once.
    public init(url: String, maximumConnections: Int = 8) {
        self.url = url
        self.maximumConnections = max(1, maximumConnections)
    }

    /// Lends a connection to `body` and takes it back afterwards; a broken connection is discarded.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await acquire()
        do {
            let value = try await body(connection)
            release(connection)
            return value
        } catch {
            release(connection)
            throw error
        }
    }

    /// Runs `body` in a transaction on a pooled connection.
    public func withTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in
            try await connection.withTransaction(body)
        }
    }

    /// Closes every idle connection.
    public func close() {
        idle.forEach { $0.close() }
        open -= idle.count
        idle.removeAll()
    }

    private func acquire() async throws -> PostgresConnection {
        while true {
            if let connection = idle.popLast() {
                return connection
            }
            if open < maximumConnections {
                open += 1
                do {
                    return try await PostgresConnection.connect(url: url)
                } catch {
                    open -= 1
                    wakeOne()
                    throw error
                }
            }
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    private func release(_ connection: PostgresConnection) {
        if connection.isHealthy {
            idle.append(connection)
        } else {
            connection.close()
            open -= 1
        }
        wakeOne()
    }

    private func wakeOne() {
        if !waiters.isEmpty {
            waiters.removeFirst().resume()
        }
    }
}
