// The lean structuredContent (issue 47): what the hosts that hand their model structuredContent
// alone receive, recognised by clientInfo.name, against the full answer the others receive,
// over the sample gateway on loopback.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "base/answer_form.hpp"
#include "server/lean_answer.hpp"
#include "tests/tool_harness.hpp"
#include "tools/kit/tool_kit.hpp"

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
    // The same rows lean, against full: the bytes the model reads for them.
    const std::size_t full_bytes = f.dump().size();
    const std::size_t same_rows_bytes = agency::mcp::lean_structured(f.dump()).size();
    std::cout << "list_keywords default page: full " << f["rows"].size() << " rows, " << full_bytes
              << " B; the same rows lean " << same_rows_bytes << " B ("
              << (100 * same_rows_bytes / full_bytes) << "%); the lean host's page "
              << l["rows"].size() << " rows, " << l.dump().size() << " B" << std::endl;
    EXPECT_LE(same_rows_bytes * 100, full_bytes * 65);
    // The default budget, counted on the lean form, holds more of the page's 100 rows.
    ASSERT_TRUE(f["rows"].is_array());
    EXPECT_LT(f["rows"].size(), 100u) << "the full default page is no longer cut by its budget";
    EXPECT_EQ(l["rows"].size(), 100u);
    EXPECT_LE(l.dump().size(), 24'000u);

    // Every row's id, keyword and position, in order, and the cursor.
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
    EXPECT_FALSE(l.value("next_cursor", "").empty());
    EXPECT_EQ(l["total"], f["total"]);

    // The published output schema holds both shapes (an SDK client validates it).
    json schema;
    for (const auto& t : h.tools())
        if (t["name"] == "list_keywords") schema = t["outputSchema"];
    const agency::tools::InputValidator validator(schema);
    EXPECT_EQ(validator.validate(l), "");
    EXPECT_EQ(validator.validate(f), "");
    // The text beside it, for the others, is made from the full rows of the same page: the
    // lean host's text names every row of its page, the last one too.
    const std::string text = lean["content"][0].value("text", "");
    const std::string last_id = l["rows"].back()[column("id")];
    EXPECT_NE(text.find(last_id), std::string::npos) << last_id;
    EXPECT_NE(text.find("kw-plumbing-"), std::string::npos);
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
        const json error_text = json::parse(r["content"][0].value("text", "{}"));
        for (const char* part : {"reason", "message", "next"})
            EXPECT_FALSE(error_text["error"].value(part, "").empty()) << name << " lacks " << part;
    }
}

}  // namespace

namespace {

// A lean host's rows as objects again (columns and arrays back to members, nulls left out).
std::vector<json> lean_rows_as_objects(const json& lean) {
    std::vector<json> out;
    const json& columns = lean["columns"];
    for (const auto& row : lean["rows"]) {
        json object = json::object();
        for (std::size_t i = 0; i < columns.size(); ++i)
            if (!row[i].is_null()) object[columns[i].get<std::string>()] = row[i];
        out.push_back(object);
    }
    return out;
}

std::vector<json> without_nulls(const json& rows) {
    std::vector<json> out;
    for (const auto& row : rows) {
        json object = json::object();
        for (const auto& [key, value] : row.items())
            if (!value.is_null()) object[key] = value;
        out.push_back(object);
    }
    return out;
}

}  // namespace

// max_bytes is counted on what the host's model reads: a lean host's page holds more rows within
// the same cap, never more bytes than it, and pages on from where it stopped. list_articles
// merges blog and geo-targeted rows (members some rows lack: nulls in their arrays).
TEST(LeanAnswer, MaxBytesIsCountedOnTheFormTheHostReads) {
    ToolHarness h;
    for (const auto& [tool, client] : std::vector<std::pair<std::string, std::string>>{
             {"list_keywords", "demo-plumbing"}, {"list_articles", "demo-law"}}) {
        SCOPED_TRACE(tool);
        // Every row, in order, from one page with room for all of them.
        const json everything = call_as_host(
            h, "", tool, {{"client_id", client}, {"limit", 1000}, {"max_bytes", 2'000'000}});
        const json& all = everything["structuredContent"]["rows"];
        ASSERT_GE(all.size(), 20u) << everything.dump().substr(0, 300);
        for (const int max_bytes : {5000, 7000}) {
            SCOPED_TRACE(max_bytes);
            const json args = {{"client_id", client}, {"limit", 1000}, {"max_bytes", max_bytes}};
            const json full = call_as_host(h, "", tool, args);
            const json lean = call_as_host(h, "claude-code", tool, args);
            const json& f = full["structuredContent"];
            const json& l = lean["structuredContent"];
            ASSERT_TRUE(l.contains("columns")) << l.dump().substr(0, 300);
            EXPECT_LE(f.dump().size(), static_cast<std::size_t>(max_bytes));
            EXPECT_LE(l.dump().size(), static_cast<std::size_t>(max_bytes));
            EXPECT_EQ(l["truncated"], true);
            std::cout << tool << " max_bytes " << max_bytes << ": full " << f["rows"].size()
                      << " rows (" << f.dump().size() << " B), lean " << l["rows"].size()
                      << " rows (" << l.dump().size() << " B) of " << all.size() << std::endl;
            EXPECT_GT(l["rows"].size(), f["rows"].size() * 5 / 4);
            // The page is the first rows, and the next page starts where it stopped.
            const std::vector<json> first = lean_rows_as_objects(l);
            const std::vector<json> expected = without_nulls(all);
            ASSERT_LE(first.size(), expected.size());
            for (std::size_t i = 0; i < first.size(); ++i)
                EXPECT_EQ(first[i], expected[i]) << "row " << i;
            json more = args;
            more["cursor"] = l["next_cursor"];
            const json next = call_as_host(h, "claude-code", tool, more);
            const std::vector<json> second = lean_rows_as_objects(next["structuredContent"]);
            ASSERT_FALSE(second.empty()) << next.dump().substr(0, 300);
            EXPECT_EQ(second.front(), expected[first.size()]);
        }
    }
}

// Rows whose members differ (a gateway's sparse records): each new column puts a null in every
// row before it, and the lean answer is within the cap however many columns the rows bring.
TEST(LeanAnswer, ASparsePageStaysWithinItsCap) {
    const agency::base::AnswerForms::Scope lean(agency::base::AnswerForm::lean);
    constexpr std::size_t kBudget = 60000;
    agency::tools::RowWriter writer("c", "records", kBudget);
    std::size_t added = 0;
    for (int r = 0; r < 200; ++r) {
        json row = json::object();
        for (int k = 0; k < 50; ++k) row["r" + std::to_string(r) + "_k" + std::to_string(k)] = k;
        if (!writer.add(row.dump())) break;
        ++added;
    }
    ASSERT_GT(added, 1u);
    ASSERT_LT(added, 200u) << "the budget never stopped the page";
    const std::string full = writer.finish(std::nullopt, "");
    const std::string lean_text = agency::mcp::lean_structured(full);
    const json shaped = json::parse(lean_text);
    EXPECT_EQ(shaped["rows"].size(), added);
    EXPECT_EQ(shaped["columns"].size(), added * 50);
    EXPECT_LE(lean_text.size(), kBudget) << added << " rows, " << full.size() << " bytes in full";
}
