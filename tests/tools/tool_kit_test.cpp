// InputValidator's messages: they name the argument and what is allowed.
#include <gtest/gtest.h>

#include "tools/kit/tool_kit.hpp"

namespace {

using agency::tools::InputValidator;
using agency::tools::json;

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "client_id": {"type": "string", "pattern": "^[a-z-]+$"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
    "note": {"type": ["string", "null"], "maxLength": 5},
    "from": {"type": "string", "format": "date"},
    "mode": {"type": "string", "enum": ["fast", "full"]}
  },
  "required": ["client_id"],
  "additionalProperties": false
})");

TEST(InputValidator, AcceptsValidArguments) {
    InputValidator v(kSchema);
    EXPECT_EQ(v.validate({{"client_id", "demo-law"}, {"limit", 10}, {"note", nullptr}}), "");
}

TEST(InputValidator, NamesTheProblem) {
    InputValidator v(kSchema);
    EXPECT_NE(v.validate(json::object()).find("missing required argument \"client_id\""),
              std::string::npos);
    std::string unknown = v.validate({{"client_id", "a"}, {"bogus", 1}});
    EXPECT_NE(unknown.find("unknown argument \"bogus\""), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("client_id, from, limit, mode, note"), std::string::npos) << unknown;
    std::string range = v.validate({{"client_id", "a"}, {"limit", 0}});
    EXPECT_NE(range.find("from 1 to 1000"), std::string::npos) << range;
    std::string pattern = v.validate({{"client_id", "A B"}});
    EXPECT_NE(pattern.find("matching"), std::string::npos) << pattern;
    std::string date = v.validate({{"client_id", "a"}, {"from", "2026-13-01"}});
    EXPECT_NE(date.find("YYYY-MM-DD"), std::string::npos) << date;
    std::string choice = v.validate({{"client_id", "a"}, {"mode", "slow"}});
    EXPECT_NE(choice.find("\"fast\""), std::string::npos) << choice;
}

// A type list must yield a message, not an exception.
TEST(InputValidator, DescribesTypeLists) {
    InputValidator v(kSchema);
    std::string message;
    ASSERT_NO_THROW(message = v.validate({{"client_id", "a"}, {"note", 42}}));
    EXPECT_NE(message.find("string or null"), std::string::npos) << message;
}

}  // namespace
