#include "tools/kit/listed_schema.hpp"

#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tools/kit/schemas.hpp"

namespace agency::tools {

using mcp::json;

namespace {

constexpr std::array kServerBounds = {"maxLength", "minLength", "maxItems", "maxProperties",
                                      "pattern"};

// Schemas nest at most a few levels (schemas/): recursion is bounded by our own files.
void strip(json& schema) {
    if (schema.is_array()) {
        for (auto& item : schema) strip(item);
        return;
    }
    if (!schema.is_object()) return;
    for (const char* key : kServerBounds) schema.erase(key);
    // The examples name the sample gateway's clients and records (tests and docs/tools.md
    // use them): a model on another gateway would copy those ids.
    schema.erase("examples");
    // "x-listed": what tools/list says instead of the description docs/tools.md renders
    // (empty: nothing).
    if (auto listed = schema.find("x-listed"); listed != schema.end()) {
        if (listed->is_string() && !listed->get<std::string>().empty())
            schema["description"] = *listed;
        else
            schema.erase("description");
        schema.erase("x-listed");
    }
    // "properties" maps names to schemas: a property named like a keyword is not one.
    for (auto& [key, value] : schema.items()) {
        if (key == "properties" && value.is_object()) {
            for (auto& [name, property] : value.items()) strip(property);
        } else if (key != "enum" && key != "required" && key != "default" && key != "const") {
            strip(value);
        }
    }
}

// What repeats the call (client_id, resource) or counts the rows (returned) is not a promise
// worth a line of every model's context.
const std::set<std::string, std::less<>> kRepeated = {"client_id", "resource", "returned"};

// Arguments many tools share, with one meaning everywhere: tools/list gives their type (and a
// limit's range), docs/tools.md ("Arguments many tools share") and the server's instructions
// describe them once instead of in every tool. max_bytes's range only guards the server.
const std::set<std::string, std::less<>> kSharedArguments = {"cursor", "fields", "limit",
                                                             "max_bytes", "idempotency_key"};

void describe_shared_once(json& input) {
    auto props = input.find("properties");
    if (props == input.end() || !props->is_object()) return;
    for (auto& [name, property] : props->items()) {
        if (!kSharedArguments.contains(name) || !property.is_object()) continue;
        property.erase("description");
        if (name == "max_bytes") property.erase("minimum"), property.erase("maximum");
    }
}

}  // namespace

json listed_input(const json& schema) {
    json out = schema;
    strip(out);
    describe_shared_once(out);
    return out;
}

json listed_output(const json& schema) {
    // An answer whose members the gateway writes ("x-passthrough") promises none of them.
    json out = {{"type", "object"}};
    if (schema.value("x-passthrough", false)) return out;
    std::set<std::string, std::less<>> required;
    if (auto r = schema.find("required"); r != schema.end() && r->is_array())
        for (const auto& name : *r)
            if (name.is_string() && !kRepeated.contains(name.get<std::string>()))
                required.insert(name.get<std::string>());
    if (!required.empty())
        out["required"] = std::vector<std::string>(required.begin(), required.end());
    return out;
}

std::shared_ptr<const json> listed_schema(std::string_view name) {
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const json>, std::less<>> made;
    std::lock_guard lock(mutex);
    if (auto it = made.find(name); it != made.end()) return it->second;
    const bool output = name.ends_with(".output");
    auto value = std::make_shared<const json>(output ? listed_output(schema(name))
                                                     : listed_input(schema(name)));
    made.emplace(std::string(name), value);
    return value;
}

}  // namespace agency::tools
