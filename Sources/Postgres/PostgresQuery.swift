/// A statement with its bound parameters.
///
/// Built by string interpolation: every interpolated value becomes a `$n` placeholder and travels separately
/// to `PQexecParams`, so a value can never be read as SQL. Only `unescaped:` splices text, for identifiers
/// that are constants in this code base.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation {
    public var sql: String
    public var binds: [String?]

    public init(sql: String, binds: [String?] = []) {
        self.sql = sql
        self.binds = binds
    }

    public init(stringLiteral value: String) {
        self.init(sql: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(sql: stringInterpolation.sql, binds: stringInterpolation.binds)
    }

    /// Appends a bound value to a query under construction and returns its placeholder (`$n`).
    public mutating func bind(_ value: (some PostgresEncodable)?) -> String {
        binds.append(value?.postgresText)
        return "$\(binds.count)"
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresText)
            sql += "$\(binds.count)"
        }

        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            binds.append(value?.postgresText)
            sql += "$\(binds.count)"
        }

        /// Splices trusted text into the statement. Never pass user input here.
        public mutating func appendInterpolation(unescaped text: String) {
            sql += text
        }
    }
}

/// A value that can be sent to PostgreSQL as a text-format parameter.
public protocol PostgresEncodable: Sendable {
    var postgresText: String { get }
}

extension String: PostgresEncodable {
    public var postgresText: String { self }
}

extension Int: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int64: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int32: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Bool: PostgresEncodable {
    public var postgresText: String { self ? "true" : "false" }
}
