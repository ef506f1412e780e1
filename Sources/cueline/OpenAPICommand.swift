import API
import ArgumentParser

/// `cueline openapi`: prints the OpenAPI document the server serves at /openapi.json.
struct OpenAPICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "openapi",
        abstract: "Print the OpenAPI document of the HTTP API (the server serves it at /openapi.json).")

    func run() {
        print(OpenAPIDocument.json)
    }
}
