// gateway::parse_json (simdjson's DOM turned into nlohmann JSON) gives what nlohmann's own
// parser gives: on every embedded schema, on awkward values, and on invalid text.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway/json_parse.hpp"
#include "tools/kit/schemas.hpp"

namespace {

using agency::gateway::parse_json;
using nlohmann::json;

TEST(ParseJson, EveryEmbeddedSchemaParsesAsNlohmannDoes) {
    const auto& all = agency::tools::embedded_schemas();
    ASSERT_GT(all.size(), 40u);
    for (const auto& s : all) {
        const json fast = parse_json(s.text, true);
        EXPECT_EQ(fast, json::parse(s.text)) << s.name;
        EXPECT_EQ(fast.dump(), json::parse(s.text).dump()) << s.name;  // same number types too
    }
}

TEST(ParseJson, AwkwardValuesMatchNlohmann) {
    for (const std::string text : {
             R"({"a":1,"b":-1,"c":0.5,"d":1e300,"e":18446744073709551615,"f":-9223372036854775808})",
             R"({"big":123456789012345678901234567890})",  // beyond 64 bits: nlohmann decides
             R"(["\u00e9\ud83d\ude00","a\"b\\c\n",true,false,null,[],{}])",
             R"({"k":1,"k":2})",
             "  [1, [2, [3]]]  ",
         }) {
        EXPECT_EQ(parse_json(text).dump(), json::parse(text).dump()) << text;
        EXPECT_EQ(parse_json(std::string_view(text)).dump(), json::parse(text).dump()) << text;
    }
}

TEST(ParseJson, InvalidTextIsDiscardedOrThrows) {
    for (const std::string text : {"", "{", R"({"a":})", "[1,]", "nul", R"({"a":1} x)"}) {
        EXPECT_TRUE(parse_json(text).is_discarded()) << text;
        EXPECT_THROW(parse_json(std::string_view(text), true), json::parse_error) << text;
    }
}

}  // namespace
