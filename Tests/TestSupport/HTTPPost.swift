import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTP {
    /// POST a JSON body; returns the body and the status.
    public static func post(_ url: String, json: String, headers: [String: String] = [:]) async throws -> (String, Int)
    {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.httpBody = Data(json.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (String(decoding: data, as: UTF8.self), (response as? HTTPURLResponse)?.statusCode ?? 0)
    }

    /// DELETE; returns the body and the status.
    public static func delete(_ url: String, headers: [String: String] = [:]) async throws -> (String, Int) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "DELETE"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (String(decoding: data, as: UTF8.self), (response as? HTTPURLResponse)?.statusCode ?? 0)
    }
}
