// append_json_string: the hot path of every tool answer (content[0].text); it must escape
// exactly as a JSON encoder does, in both of its paths (with and without control characters).
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/json_rpc.hpp"

namespace {

std::string escaped(std::string_view text) {
    std::string out = "prefix:";
    agency::mcp::append_json_string(out, text);
    return out;
}

TEST(AppendJsonString, MatchesAJsonEncoder) {
    const std::string cases[] = {
        "",
        "plain text",
        R"({"rows":[{"keyword":"a \"quoted\" one","url":"https://x.example/a\\b"}]})",
        "\\\\\"\"",
        std::string("nul\0inside", 10),
        "tab\tnew\nline\rcr\bback\fform\x01\x1f end",
        "unicode: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
        std::string(1000, '"'),
    };
    std::string mixed;
    for (int i = 0; i < 2000; ++i) {
        mixed += static_cast<char>(i % 128);
        if (i % 7 == 0) mixed += "\"k\":\"v\\\"";
        if (i % 13 == 0) mixed += "plain run of text without escapes ";
        SCOPED_TRACE(i);
        ASSERT_EQ(escaped(mixed), "prefix:" + nlohmann::json(mixed).dump());
    }
    for (const auto& text : cases) {
        SCOPED_TRACE(text);
        EXPECT_EQ(escaped(text), "prefix:" + nlohmann::json(text).dump());
        // Round trip.
        EXPECT_EQ(nlohmann::json::parse(escaped(text).substr(7)).get<std::string>(), text);
    }
}

}  // namespace
