// The lean structuredContent (issue 47): what the hosts that hand their model structuredContent
// alone receive, recognised by clientInfo.name, against the full answer the others receive,
// over the sample gateway on loopback.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/lean_answer.hpp"
#include "tests/tool_harness.hpp"
#include "tools/tool_kit.hpp"

namespace {

using agency::testing::ToolHarness;
using json = nlohmann::json;

// tools/call as a 2026-07-28 request from a client that names itself `client` ("" = no name).
json call_as_host(ToolHarness& h, const std::string& client, const std::string& tool,
                  const json& args) {
    json meta = ToolHarness::modern_meta();
    if (!client.empty())
        meta["io.modelcontextprotocol/clientInfo"] = {{"name", client}, {"version", "2.1.280"}};
    const json message = {{"jsonrpc", "2.0"},
                          {"id", h.next_id++},
                          {"method", "tools/call"},
                          {"params", {{"name", tool}, {"arguments", args}, {"_meta", meta}}}};
    agency::mcp::Inbound in;
    in.principal.name = "local";
    auto text = h.server->handle_message(message, in);
    return text ? json::parse(text->text)["result"] : json();
}

TEST(LeanAnswer, RowsBecomeColumnsAndArraysWithEveryValueKept) {
    const std::string full =
        R"({"client_id":"c","rows":[{"id":"a","n":1,"gone":null},{"n":2,"id":"b","x":{"k":[1]}}],)"
        R"("total":2,"note":null,"next_cursor":"z"})";
    const json lean = json::parse(agency::mcp::lean_structured(full));
    EXPECT_EQ(lean["columns"], json({"id", "n", "x"}));  // "gone" is null in every row
    EXPECT_EQ(lean["rows"], json::parse(R"([["a",1,null],["b",2,{"k":[1]}]])"));
    EXPECT_FALSE(lean.contains("note"));
    EXPECT_EQ(lean["next_cursor"], "z");
    EXPECT_EQ(lean["total"], 2);
    // Not an object, or rows that are not objects: as it was.
    EXPECT_EQ(agency::mcp::lean_structured("[1,2]"), "[1,2]");
    EXPECT_EQ(json::parse(agency::mcp::lean_structured(R"({"rows":[1,2]})"))["rows"], json({1, 2}));
}

TEST(LeanAnswer, EachKnownHostGetsItsShape) {
    for (const char* lean : {"claude-code", "Claude Code", "github-copilot-cli", "opencode",
                             "codex-mcp-client"})
        EXPECT_TRUE(agency::mcp::shows_model_structured_content(lean)) << lean;
    for (const char* full : {"", "openai-agents-js", "ai-sdk-mcp-client", "mastra",
                             "langchain-mcp-adapters", "inspector-client", "sdk-toolsets"})
        EXPECT_FALSE(agency::mcp::shows_model_structured_content(full)) << full;
    agency::mcp::ServerOptions options;
    agency::mcp::RequestContext ctx;
    ctx.meta["io.modelcontextprotocol/clientInfo"] = {{"name", "claude-code"}};
    EXPECT_TRUE(agency::mcp::lean_answer_for(options, ctx));
    options.structured_content = agency::mcp::StructuredContent::full;
    EXPECT_FALSE(agency::mcp::lean_answer_for(options, ctx));
    options.structured_content = agency::mcp::StructuredContent::lean;
    ctx.meta = json::object();
    EXPECT_TRUE(agency::mcp::lean_answer_for(options, ctx));
}

TEST(LeanAnswer, ClaudeCodeReadsTheDefaultKeywordPageInUnderTwoThirdsOfTheBytes) {
    ToolHarness h;
    const json args = {{"client_id", "demo-plumbing"}};
    const json full = call_as_host(h, "", "list_keywords", args);
    const json lean = call_as_host(h, "claude-code", "list_keywords", args);
    ASSERT_TRUE(full.contains("structuredContent")) << full.dump().substr(0, 300);
    ASSERT_TRUE(lean.contains("structuredContent")) << lean.dump().substr(0, 300);
    const json& f = full["structuredContent"];
    const json& l = lean["structuredContent"];
    const std::size_t full_bytes = f.dump().size();
    const std::size_t lean_bytes = l.dump().size();
    std::cout << "list_keywords default page: full " << full_bytes << " B, lean " << lean_bytes
              << " B (" << (100 * lean_bytes / full_bytes) << "%)" << std::endl;
    EXPECT_LE(lean_bytes * 100, full_bytes * 65);

    // Every row's id, keyword and position, in order, and the cursor.
    ASSERT_TRUE(f["rows"].is_array());
    ASSERT_EQ(l["rows"].size(), f["rows"].size());
    const std::vector<std::string> columns = l["columns"].get<std::vector<std::string>>();
    auto column = [&](const std::string& name) {
        const auto at = std::find(columns.begin(), columns.end(), name);
        EXPECT_NE(at, columns.end()) << name;
        return static_cast<std::size_t>(at - columns.begin());
    };
    for (std::size_t i = 0; i < f["rows"].size(); ++i)
        for (const char* member : {"id", "keyword", "position"})
            EXPECT_EQ(l["rows"][i][column(member)], f["rows"][i][member]) << i << " " << member;
    EXPECT_FALSE(f.value("next_cursor", "").empty());
    EXPECT_EQ(l["next_cursor"].get<std::string>().size(), f["next_cursor"].get<std::string>().size());
    EXPECT_EQ(l["total"], f["total"]);

    // The published output schema holds both shapes (an SDK client validates it).
    json schema;
    for (const auto& t : h.tools())
        if (t["name"] == "list_keywords") schema = t["outputSchema"];
    const agency::tools::InputValidator validator(schema);
    EXPECT_EQ(validator.validate(l), "");
    EXPECT_EQ(validator.validate(f), "");
    // The text beside it, for the others, is the full answer's either way.
    // (Each answer's cursor is its own, sealed with its own nonce: the text up to it.)
    const auto before_cursor = [](const json& result) {
        const std::string text = result["content"][0].value("text", "");
        return text.substr(0, text.find("next_cursor:"));
    };
    EXPECT_TRUE(before_cursor(lean) == before_cursor(full));
    EXPECT_NE(before_cursor(lean).find("kw-plumbing-"), std::string::npos);
    // Errors keep their whole text and no lean rewrite.
    const json error = call_as_host(h, "claude-code", "get_client", {{"client_id", "nobody"}});
    EXPECT_TRUE(error.value("isError", false)) << error.dump().substr(0, 300);
    EXPECT_NE(error["content"][0].value("text", "").find("list_clients"), std::string::npos);
    // The text is complete on its own (Claude Code shows an error's text and drops the rest):
    // the reason, the message and what to do next, for each kind of error a model meets.
    for (const auto& [name, arguments] : std::vector<std::pair<std::string, json>>{
             {"get_client", {{"client_id", "nobody"}}},
             {"list_keywords", {{"client_id", "demo-law"}, {"where", {{"x", {{"between", 1}}}}}}},
             {"list_rankings", {{"client_id", "demo-law"}, {"from", "2026-02-01"},
                                {"to", "2026-01-01"}}}}) {
        const json r = call_as_host(h, "claude-code", name, arguments);
        ASSERT_TRUE(r.value("isError", false)) << name << ": " << r.dump().substr(0, 300);
        const json text = json::parse(r["content"][0].value("text", "{}"));
        for (const char* part : {"reason", "message", "next"})
            EXPECT_FALSE(text["error"].value(part, "").empty()) << name << " lacks " << part;
    }
}

}  // namespace
