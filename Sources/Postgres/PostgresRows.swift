/// The rows a statement returned, in PostgreSQL's text format, copied out of the libpq result.
public struct PostgresRows: Sendable {
    public var columns: [String]
    public var rows: [[String?]]
    /// The count from the command tag (`INSERT 0 3` → 3), for statements without rows.
    public var affectedRows: Int

    public init(columns: [String] = [], rows: [[String?]] = [], affectedRows: Int = 0) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
    }

    public var isEmpty: Bool { rows.isEmpty }
    public var count: Int { rows.count }

    /// The single value of a one-row, one-column result.
    public func scalar() -> String? {
        rows.first?.first ?? nil
    }
}

extension Array where Element == String? {
    /// The column `index` as a string, or a decoding error naming the column.
    public func string(_ index: Int, _ name: String) throws -> String {
        guard index < count, let value = self[index] else {
            throw PostgresError(kind: .statementFailed, message: "column \(name) is unexpectedly NULL")
        }
        return value
    }

    public func optionalString(_ index: Int) -> String? {
        index < count ? self[index] : nil
    }

    public func int64(_ index: Int, _ name: String) throws -> Int64 {
        let text = try string(index, name)
        guard let value = Int64(text) else {
            throw PostgresError(kind: .statementFailed, message: "column \(name) is not an integer: \(text)")
        }
        return value
    }

    public func optionalInt64(_ index: Int) -> Int64? {
        optionalString(index).flatMap { Int64($0) }
    }
}
