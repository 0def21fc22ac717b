import Foundation

/// The processes whose parent is `pid` (a daemon's workers), from /proc.
public func childProcesses(of pid: Int32) throws -> [Int32] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap { entry in
        guard let child = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8)
        else { return nil }
        // The fields after the parenthesised name: state, then the parent's id.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return fields.count > 1 && Int32(fields[1]) == pid ? child : nil
    }
}
