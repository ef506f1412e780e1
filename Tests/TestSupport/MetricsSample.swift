/// The value of one sample line of a Prometheus exposition (`/metrics`), e.g. `name{a="b"} 3`, by everything before
/// the value; nil when there is no such line.
public func metricSample(_ exposition: String, _ prefix: String) -> Double? {
    exposition.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap {
        Double($0.split(separator: " ").last!)
    }
}
