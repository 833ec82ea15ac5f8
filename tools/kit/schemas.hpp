// JSON Schemas of tool inputs and outputs: the files of schemas/, embedded at build time.
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace agency::tools {

struct EmbeddedSchema {
    std::string_view name;  // file name without .json, e.g. "list_keywords.input"
    std::string_view text;
};

const std::vector<EmbeddedSchema>& embedded_schemas();
// The parsed schema (parsed once); throws std::out_of_range naming a missing schema.
const nlohmann::json& schema(std::string_view name);
// Whether schemas/<name>.json is embedded.
bool has_schema(std::string_view name);

}  // namespace agency::tools
