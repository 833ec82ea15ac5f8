// A tool's valid arguments for a test: the first of the `examples` in its input schema
// (schemas/<tool>.input.json), on the sample gateway's clients and records. One definition
// that tests, fuzz seeds and docs/tools.md share (tests/tools/input_examples_test.cpp checks each).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/kit/schemas.hpp"

namespace agency::testing {

inline nlohmann::json input_example(const std::string& tool) {
    const nlohmann::json& schema = tools::schema(tool + ".input");
    const auto examples = schema.find("examples");
    if (examples == schema.end() || !examples->is_array() || examples->empty())
        throw std::out_of_range("schemas/" + tool + ".input.json has no examples");
    return examples->front();
}

}  // namespace agency::testing
