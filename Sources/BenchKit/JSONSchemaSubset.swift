import Foundation

/// Checks a JSON document against a JSON Schema written with a small subset of the keywords:
/// `type` (one name or a list; "integer" accepts integral numbers), `properties`, `required`,
/// `additionalProperties` (true, false or a schema), `items`, `enum`, `minimum`, `maximum`, and
/// `$ref` to `#/$defs/NAME`. Enough to pin the bench report's layout (Benchmarks/BENCH.md)
/// without a schema library; unknown keywords are ignored, as JSON Schema says.
public struct JSONSchemaSubset {
    /// The schema, as `JSONSerialization` parsed it.
    public let schema: [String: Any]

    public init(schema: [String: Any]) {
        self.schema = schema
    }

    /// Parses a schema from JSON text.
    public init(json: Data) throws {
        guard let object = try JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            throw SchemaError(description: "the schema is not a JSON object")
        }
        self.init(schema: object)
    }

    /// A schema that cannot be used.
    public struct SchemaError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Every violation in `document` (parsed by `JSONSerialization`), each as "path: problem";
    /// empty when the document conforms.
    public func violations(of document: Any) -> [String] {
        var problems: [String] = []
        check(document, against: schema, at: "$", into: &problems)
        return problems
    }

    private func check(_ value: Any, against schema: [String: Any], at path: String, into problems: inout [String]) {
        if let reference = schema["$ref"] as? String {
            guard let resolved = resolve(reference) else {
                problems.append("\(path): unresolvable $ref \(reference)")
                return
            }
            check(value, against: resolved, at: path, into: &problems)
            return
        }
        if let types = schema["type"] {
            let allowed = (types as? [String]) ?? [(types as? String) ?? ""]
            guard allowed.contains(where: { Self.matches(value, type: $0) }) else {
                problems.append("\(path): expected \(allowed.joined(separator: " or ")), found \(Self.typeName(value))")
                return
            }
        }
        if let options = schema["enum"] as? [Any], !options.contains(where: { Self.equal($0, value) }) {
            problems.append("\(path): \(value) is not one of \(options)")
        }
        if let number = Self.number(value) {
            if let minimum = schema["minimum"].flatMap(Self.number), number < minimum { problems.append("\(path): \(number) < minimum \(minimum)") }
            if let maximum = schema["maximum"].flatMap(Self.number), number > maximum { problems.append("\(path): \(number) > maximum \(maximum)") }
        }
        if let object = value as? [String: Any] {
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for key in schema["required"] as? [String] ?? [] where object[key] == nil {
                problems.append("\(path): missing required key \"\(key)\"")
            }
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                if let sub = properties[key] as? [String: Any] {
                    check(member, against: sub, at: "\(path).\(key)", into: &problems)
                } else if let extra = schema["additionalProperties"] {
                    if Self.isBool(extra), (extra as? Bool) == false {
                        problems.append("\(path): unexpected key \"\(key)\"")
                    } else if let sub = extra as? [String: Any] {
                        check(member, against: sub, at: "\(path).\(key)", into: &problems)
                    }
                }
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (i, element) in array.enumerated() { check(element, against: items, at: "\(path)[\(i)]", into: &problems) }
        }
    }

    private func resolve(_ reference: String) -> [String: Any]? {
        for prefix in ["#/$defs/", "#/definitions/"] where reference.hasPrefix(prefix) {
            let name = String(reference.dropFirst(prefix.count))
            let defs = schema[prefix == "#/$defs/" ? "$defs" : "definitions"] as? [String: Any]
            return defs?[name] as? [String: Any]
        }
        return nil
    }

    /// JSONSerialization gives booleans as NSNumbers whose Objective-C type is "c".
    private static func isBool(_ value: Any) -> Bool {
        guard let n = value as? NSNumber else { return false }
        return String(cString: n.objCType) == "c"
    }

    private static func isNumberNotBool(_ value: Any) -> Bool { value is NSNumber && !isBool(value) }

    private static func number(_ value: Any) -> Double? {
        guard isNumberNotBool(value), let n = value as? NSNumber else { return nil }
        return n.doubleValue
    }

    private static func matches(_ value: Any, type: String) -> Bool {
        switch type {
        case "null": return value is NSNull
        case "boolean": return isBool(value)
        case "number": return number(value) != nil
        case "integer": return number(value).map { $0.rounded() == $0 && $0.isFinite } ?? false
        case "string": return value is String
        case "array": return value is [Any]
        case "object": return value is [String: Any]
        default: return false
        }
    }

    private static func typeName(_ value: Any) -> String {
        for type in ["null", "boolean", "integer", "number", "string", "array", "object"] where matches(value, type: type) { return type }
        return "\(Swift.type(of: value))"
    }

    private static func equal(_ a: Any, _ b: Any) -> Bool {
        if let x = a as? String, let y = b as? String { return x == y }
        if let x = number(a), let y = number(b) { return x == y }
        if isBool(a) && isBool(b) { return (a as? Bool) == (b as? Bool) }
        return a is NSNull && b is NSNull
    }
}
