// One definition of valid arguments for a tool (issue 50): the `examples` of its input schema
// (schemas/<tool>.input.json), which tests, fuzz seeds (fuzz/make_seeds.py) and docs/tools.md
// read. Each example is valid against its schema, each tool answers its example on the sample
// gateway without an error, and tools/list leaves the examples out (they name the sample's ids).
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/action_tool_harness.hpp"
#include "tests/support/input_examples.hpp"
#include "tools/kit/schemas.hpp"
#include "tools/kit/tool_kit.hpp"

namespace {

using json = nlohmann::json;
using agency::testing::ActionToolHarness;
using agency::testing::input_example;

// The tools with an input schema of their own: schemas/<tool>.input.json.
std::set<std::string> tools_with_input_schemas() {
    std::set<std::string> names;
    for (const auto& s : agency::tools::embedded_schemas()) {
        const std::string name(s.name);
        if (name.ends_with(".input")) names.insert(name.substr(0, name.size() - 6));
    }
    return names;
}

// A modern tools/call from a client that declares the MCP Apps extension, so that the tools
// only views call (view_ranking_history) are there too.
json call_with_views(ActionToolHarness& t, const std::string& tool, const json& args) {
    json params = {{"name", tool}, {"arguments", args}};
    params["_meta"] = {
        {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
        {"io.modelcontextprotocol/clientCapabilities",
         {{"extensions",
           {{"io.modelcontextprotocol/ui", {{"mimeTypes", {"text/html;profile=mcp-app"}}}}}}}}};
    const json message = {{"jsonrpc", "2.0"},
                          {"id", t.h->next_id++},
                          {"method", "tools/call"},
                          {"params", std::move(params)}};
    agency::mcp::Inbound in;
    in.principal.name = "local";
    auto text = t.h->server->handle_message(message, in);
    return text ? json::parse(text->text) : json(nullptr);
}

TEST(InputExamples, EverySchemaHasExamplesItAccepts) {
    const auto names = tools_with_input_schemas();
    ASSERT_GT(names.size(), 30u);
    for (const auto& tool : names) {
        const json& schema = agency::tools::schema(tool + ".input");
        const auto examples = schema.find("examples");
        ASSERT_TRUE(examples != schema.end() && examples->is_array() && !examples->empty())
            << tool << ": no examples in schemas/" << tool << ".input.json";
        const agency::tools::InputValidator validator(schema);
        for (const auto& example : *examples)
            EXPECT_EQ(validator.validate(example), "") << tool << ": " << example.dump();
    }
}

TEST(InputExamples, ToolsListLeavesThemOut) {
    ActionToolHarness t;
    const json tools = t.h->tools();
    ASSERT_GT(tools.size(), 20u);
    for (const auto& tool : tools)
        EXPECT_FALSE(tool.dump().find("\"examples\"") != std::string::npos)
            << tool["name"] << " lists its examples";
}

// Every tool answers its example on the sample gateway. Three examples name
// what the server makes at run time: get_audit_status takes run_seo_audit's audit_id,
// send_prospect_email generate_outreach_email's email_id (a draft kept by this server), and
// view_decide (which only a view calls) a sealed approval, so it is not called here.
TEST(InputExamples, EveryToolAnswersItsExampleOnTheSampleGateway) {
    ActionToolHarness t;
    std::set<std::string> called;
    // The id a tool makes, from a call of that tool with its own example.
    const auto made = [&](const std::string& maker, const std::string& member) {
        const std::string id = t.ok(maker, input_example(maker)).value(member, "");
        EXPECT_FALSE(id.empty()) << maker << " gave no " << member;
        return id;
    };
    for (const auto& tool : tools_with_input_schemas()) {
        if (tool == "view_decide") continue;
        json args = input_example(tool);
        if (tool == "get_audit_status") args["audit_id"] = made("run_seo_audit", "audit_id");
        if (tool == "send_prospect_email")
            args["email_id"] = made("generate_outreach_email", "email_id");
        const json reply = call_with_views(t, tool, args);
        EXPECT_FALSE(reply.contains("error") || reply["result"].value("isError", true))
            << tool << " " << args.dump() << ": " << reply.dump().substr(0, 600);
        called.insert(tool);
    }
    // Every tool a model is given was among them.
    for (const auto& tool : t.listed()) EXPECT_TRUE(called.contains(tool)) << tool;
    EXPECT_GT(called.size(), 30u);
}

}  // namespace
