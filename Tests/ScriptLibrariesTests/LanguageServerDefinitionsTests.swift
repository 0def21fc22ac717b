import Foundation
import ScriptLibraries
import Testing

/// docs/lua/hotspot-helper.lua must describe every library function scripts can call, so
/// editors complete what the runtime really offers.
@Test func theDefinitionsFileCoversEveryPublicLibraryFunction() throws {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/lua/hotspot-helper.lua").standardized.path
    let definitions = try String(contentsOfFile: path, encoding: .utf8)
    #expect(definitions.hasPrefix("---@meta"))
    for module in ScriptLibraries.modules where module.isPublic {
        for function in module.functions where module.name != "time" || function.name != "sleep" {
            #expect(definitions.contains("function \(module.name).\(function.name)("), "\(module.name).\(function.name)")
        }
    }
    for method in ["create_response", "http", "submit", "probe", "secret", "tcp", "udp"] {
        #expect(definitions.contains("function Command:\(method)("))
    }
}
