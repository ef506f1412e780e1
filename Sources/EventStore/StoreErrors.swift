import Logging
import Postgres

/// The one mapping from driver errors to store errors, for every PostgreSQL store of this module.
enum StoreErrors {
    /// Runs `body`; driver errors become store errors an operator can act on, store errors pass through.
    static func map<T>(logger: Logger? = nil, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StoreError {
            throw error
        } catch let error as PostgresError {
            if error.sqlState == "22021" { throw StoreError.invalidValue(error.message) }
            if error.isUnavailable {
                logger?.warning("database unavailable", metadata: ["error": "\(error)"])
                throw StoreError.unavailable("\(error)")
            }
            logger?.error("database error", metadata: ["error": "\(error)", "statement": "\(error.statement ?? "")"])
            throw StoreError.database("\(error)")
        }
    }
}
