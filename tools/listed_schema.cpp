#include "tools/listed_schema.hpp"

#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tools/schemas.hpp"

namespace agency::tools {

using mcp::json;

namespace {

constexpr std::array kServerBounds = {"maxLength", "minLength", "maxItems", "maxProperties",
                                     "pattern"};

// Schemas nest at most a few levels (schemas/): recursion is bounded by our own files.
void strip(json& schema, bool output) {
    if (schema.is_array()) {
        for (auto& item : schema) strip(item, output);
        return;
    }
    if (!schema.is_object()) return;
    if (output && schema.value("x-passthrough", false)) {
        schema = {{"type", "object"}};
        return;
    }
    // "x-brief": a part of an answer a client reads rather than validates (an insight's rows,
    // its provenance and model) is published by its type alone; docs/tools.md has the rest.
    if (output && schema.value("x-brief", false)) {
        schema = {{"type", schema.value("type", json("object"))}};
        return;
    }
    schema.erase("x-passthrough");
    schema.erase("x-brief");
    if (output) {
        schema.erase("description");
    } else {
        for (const char* key : kServerBounds) schema.erase(key);
    }
    // "properties" maps names to schemas: a property named like a keyword is not one.
    for (auto& [key, value] : schema.items()) {
        if (key == "properties" && value.is_object()) {
            for (auto& [name, property] : value.items()) strip(property, output);
        } else if (key != "enum" && key != "required" && key != "default" && key != "const") {
            strip(value, output);
        }
    }
}

// At the top of an output: what repeats the call (client_id, resource) or counts the rows
// (returned) is left out, and of the rest what every answer has (required) and what leads to
// the next call; docs/tools.md lists every field.
const std::set<std::string, std::less<>> kRepeated = {"client_id", "resource", "returned"};
const std::set<std::string, std::less<>> kNextStep = {"rows", "next_cursor", "truncated",
                                                      "note", "preview", "confirmation_id"};

void keep_top_fields(json& output) {
    auto props = output.find("properties");
    if (props == output.end() || !props->is_object()) return;
    std::set<std::string, std::less<>> required;
    if (auto r = output.find("required"); r != output.end() && r->is_array()) {
        for (const auto& name : *r)
            if (name.is_string() && !kRepeated.contains(name.get<std::string>()))
                required.insert(name.get<std::string>());
        *r = json(std::vector<std::string>(required.begin(), required.end()));
    }
    for (auto it = props->begin(); it != props->end();) {
        const bool keep = !kRepeated.contains(it.key()) &&
                          (required.contains(it.key()) || kNextStep.contains(it.key()));
        it = keep ? std::next(it) : props->erase(it);
    }
}

}  // namespace

json listed_input(const json& schema) {
    json out = schema;
    strip(out, false);
    return out;
}

json listed_output(const json& schema) {
    json out = schema;
    strip(out, true);
    keep_top_fields(out);
    // A lean answer (server/lean_answer.hpp) carries its rows as arrays under "columns".
    if (auto props = out.find("properties"); props != out.end()) {
        auto rows = props->find("rows");
        if (rows != props->end() && rows->is_object()) {
            auto items = rows->find("items");
            if (items != rows->end() && items->is_object() &&
                items->value("type", json()) == "object")
                (*items)["type"] = json::array({"object", "array"});
        }
    }
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
