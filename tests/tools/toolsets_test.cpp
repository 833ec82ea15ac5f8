// Toolsets (issue 18): the server's selection (--toolsets, --tools, --exclude-tools), a request's
// own over HTTP (X-MCP-* headers, which only narrow), and the instructions written from what is
// enabled. Every tool is registered over the sample gateway on a loopback port.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server/mcp_server.hpp"
#include "tests/support/action_store.hpp"
#include "tests/tool_harness.hpp"
#include "tools/kit/toolsets.hpp"
#include "transport/http_transport.hpp"

namespace {

using agency::mcp::Principal;
using agency::mcp::ToolSelection;
using agency::testing::ToolHarness;
using agency::testing::json;

ToolHarness every_tool() {
    return ToolHarness({}, {}, [](agency::mcp::Server& server, const auto& box) {
        agency::tools::register_all(
            server, box,
            std::make_shared<agency::tools::ActionRuntime>(agency::testing::with_store({})));
    });
}

std::set<std::string> names_of(const json& tools) {
    std::set<std::string> names;
    for (const auto& t : tools) names.insert(t.value("name", ""));
    return names;
}

// A toolset's tools as registered (each entry names its toolset), not a list kept here.
std::set<std::string> toolset_of(std::string_view group) {
    static const std::map<std::string, std::set<std::string>, std::less<>> by_group = [] {
        std::map<std::string, std::set<std::string>, std::less<>> out;
        ToolHarness h = every_tool();
        for (const agency::mcp::ToolDef* tool : h.server->visible_tools(Principal{}))
            out[tool->group].insert(tool->name);
        return out;
    }();
    auto it = by_group.find(group);
    return it == by_group.end() ? std::set<std::string>{} : it->second;
}

// The two toolsets these tests select by, with a tool each that must be in it.
const std::set<std::string>& clients_tools() {
    static const std::set<std::string> tools = toolset_of("clients");
    return tools;
}
const std::set<std::string>& rankings_tools() {
    static const std::set<std::string> tools = toolset_of("rankings");
    return tools;
}

TEST(Toolsets, TheToolsetsTheseTestsSelectByHoldTheirTools) {
    EXPECT_TRUE(clients_tools().contains("get_client"));
    EXPECT_TRUE(rankings_tools().contains("list_keywords"));
    EXPECT_FALSE(rankings_tools().contains("list_backlinks"));
}

std::set<std::string> joined(std::set<std::string> a, const std::set<std::string>& b) {
    a.insert(b.begin(), b.end());
    return a;
}

TEST(Toolsets, EveryToolHasAKnownToolsetAndEveryToolsetHasTools) {
    ToolHarness h = every_tool();
    std::set<std::string> used;
    for (const agency::mcp::ToolDef* tool : h.server->visible_tools(Principal{})) {
        EXPECT_FALSE(tool->group.empty()) << tool->name << " has no toolset";
        used.insert(tool->group);
    }
    for (const auto& set : agency::tools::toolsets())
        EXPECT_TRUE(used.contains(std::string(set.name))) << set.name << " has no tool";
    EXPECT_EQ(used.size(), agency::tools::toolsets().size());
}

TEST(Toolsets, AToolsetKeepsItsToolsAndTheClientsOnesAndRefusesTheRest) {
    ToolHarness h = every_tool();
    h.server->set_tool_selection({.groups = {"rankings"}});
    EXPECT_EQ(names_of(h.tools()), joined(clients_tools(), rankings_tools()));
    const auto refused = h.call("list_backlinks", {{"client_id", "demo-dental"}});
    EXPECT_EQ(refused.rpc_error, -32602) << refused.response.dump();
    EXPECT_NE(refused.response.dump().find("not among the toolsets and tools enabled"),
              std::string::npos);
    const auto kept = h.call("list_keywords", {{"client_id", "demo-dental"}, {"limit", 1}});
    EXPECT_FALSE(kept.is_error()) << kept.response.dump();
    EXPECT_EQ(kept.rpc_error, 0);
}

TEST(Toolsets, ToolsAloneKeepOnlyThoseAndExclusionWins) {
    ToolHarness h = every_tool();
    h.server->set_tool_selection({.tools = {"list_backlinks", "list_calls"}});
    EXPECT_EQ(names_of(h.tools()), (std::set<std::string>{"list_backlinks", "list_calls"}));

    ToolHarness both = every_tool();
    both.server->set_tool_selection({.groups = {"rankings", "backlinks"},
                                     .tools = {"list_calls"},
                                     .exclude = {"list_calls", "refresh_backlinks", "get_client"}});
    auto want = joined(rankings_tools(), {"list_clients", "list_backlinks"});
    EXPECT_EQ(names_of(both.tools()), want) << "exclusion wins, also over clients and --tools";

    ToolHarness all = every_tool();
    const std::size_t everything = names_of(all.tools()).size();
    all.server->set_tool_selection({.groups = {"all"}, .exclude = {"deploy_article"}});
    EXPECT_EQ(names_of(all.tools()).size(), everything - 1);
    ToolHarness def = every_tool();
    def.server->set_tool_selection({.groups = {"default"}});
    EXPECT_EQ(names_of(def.tools()).size(), everything);
}

TEST(Toolsets, UnknownNamesAreRefusedNamingWhatExists) {
    ToolHarness h = every_tool();
    try {
        h.server->set_tool_selection({.groups = {"ranking"}});
        FAIL() << "an unknown toolset was accepted";
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("unknown toolset \"ranking\""), std::string::npos) << what;
        EXPECT_NE(what.find("rankings"), std::string::npos) << "lists the toolsets: " << what;
    }
    EXPECT_THROW(h.server->set_tool_selection({.exclude = {"delete_everything"}}),
                 std::invalid_argument);
    EXPECT_EQ(h.tools().size(), names_of(h.tools()).size());
    EXPECT_GT(h.tools().size(), 20u) << "a refused selection changes nothing";
}

TEST(Toolsets, ARequestNarrowsWithinTheServersSelectionNeverBeyond) {
    ToolHarness h = every_tool();
    h.server->set_tool_selection({.groups = {"rankings", "backlinks"}});
    Principal narrow;
    narrow.selection = {.groups = {"backlinks"}};
    EXPECT_EQ(names_of(h.tools_as(narrow)),
              joined(clients_tools(), {"list_backlinks", "refresh_backlinks"}));
    Principal widen;
    widen.selection = {.tools = {"list_calls", "list_keywords"}};
    EXPECT_EQ(names_of(h.tools_as(widen)), (std::set<std::string>{"list_keywords"}));
    EXPECT_EQ(h.call_as(widen, "list_calls", {{"client_id", "demo-dental"}}).rpc_error, -32602);
}

TEST(Toolsets, InstructionsFollowWhatIsEnabled) {
    ToolHarness h = every_tool();
    auto text_for = [&](const ToolSelection& selection, bool read_only) {
        ToolHarness one = every_tool();
        one.server->set_tool_selection(selection);
        Principal who;
        if (read_only) who.scopes = {"read"};
        return agency::tools::server_instructions(one.server->visible_tools(who), read_only);
    };
    const std::string everything = text_for({}, false);
    EXPECT_NE(everything.find("toolsets: clients, rankings, audits"), std::string::npos)
        << everything;
    EXPECT_NE(everything.find("confirmation"), std::string::npos);
    EXPECT_NE(everything.find("get_audit_status"), std::string::npos);
    EXPECT_LT(everything.size(), 600u) << "instructions stay short";
    const std::string rankings = text_for({.groups = {"rankings"}}, false);
    EXPECT_NE(rankings.find("toolsets: clients, rankings)"), std::string::npos) << rankings;
    EXPECT_EQ(rankings.find("confirmation"), std::string::npos) << rankings;
    EXPECT_EQ(rankings.find("run_seo_audit"), std::string::npos) << rankings;
    const std::string read_only = text_for({}, true);
    EXPECT_NE(read_only.find("Read-only"), std::string::npos);
    EXPECT_EQ(read_only.find("confirmation"), std::string::npos) << read_only;
}

// Over HTTP, the X-MCP-* headers of one request narrow that request only.
class ToolsetHeaders : public ::testing::Test {
protected:
    ToolHarness h = every_tool();
    std::unique_ptr<agency::mcp::HttpTransport> http;
    int port = 0;
    void SetUp() override {
        agency::mcp::HttpOptions options;
        options.host = "127.0.0.1";
        options.port = 0;
        http = std::make_unique<agency::mcp::HttpTransport>(*h.server, options);
        port = http->start();
    }
    void TearDown() override { http->stop(); }

    httplib::Result post(const std::string& method, json params, httplib::Headers headers) {
        params["_meta"] = ToolHarness::modern_meta();
        const json body = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
        headers.emplace("MCP-Protocol-Version", "2026-07-28");
        headers.emplace("Mcp-Method", method);
        if (params.contains("name")) headers.emplace("Mcp-Name", params["name"].get<std::string>());
        httplib::Client client("127.0.0.1", port);
        return client.Post("/mcp", headers, body.dump(), "application/json");
    }
    std::set<std::string> listed(const httplib::Headers& headers) {
        auto res = post("tools/list", json::object(), headers);
        EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
        return res ? names_of(json::parse(res->body)["result"]["tools"]) : std::set<std::string>{};
    }
};

TEST_F(ToolsetHeaders, HeadersNarrowOneRequest) {
    const std::size_t everything = listed({}).size();
    EXPECT_EQ(listed({{"X-MCP-Toolsets", "rankings"}}), joined(clients_tools(), rankings_tools()));
    EXPECT_EQ(listed({{"X-MCP-Tools", " list_calls , list_backlinks"}}),
              (std::set<std::string>{"list_calls", "list_backlinks"}));
    EXPECT_EQ(listed({{"X-MCP-Toolsets", "rankings"}, {"X-MCP-Exclude-Tools", "get_client"}}),
              joined(rankings_tools(), {"list_clients"}));
    EXPECT_EQ(listed({}).size(), everything) << "the next request without headers sees all";

    const auto read_only = listed({{"X-MCP-Readonly", "true"}});
    EXPECT_FALSE(read_only.contains("deploy_article"));
    EXPECT_TRUE(read_only.contains("list_articles"));
    auto refused = post("tools/call",
                        {{"name", "generate_topical_map"},
                         {"arguments", {{"client_id", "demo-dental"}, {"topic", "implants"}}}},
                        {{"X-MCP-Readonly", "1"}});
    ASSERT_TRUE(refused);
    EXPECT_NE(refused->body.find("'write' scope"), std::string::npos) << refused->body;
    for (const auto& r : h.gw->request_log()) EXPECT_NE(r.method, "POST") << r.target;
}

TEST_F(ToolsetHeaders, BadHeaderValuesAreRefusedWithWhatIsWrong) {
    auto unknown = post("tools/list", json::object(), {{"X-MCP-Toolsets", "rankings,seo"}});
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 400);
    EXPECT_NE(unknown->body.find("unknown toolset \\\"seo\\\""), std::string::npos)
        << unknown->body;
    auto tool = post("tools/list", json::object(), {{"X-MCP-Exclude-Tools", "nope"}});
    ASSERT_TRUE(tool);
    EXPECT_EQ(tool->status, 400);
    auto flag = post("tools/list", json::object(), {{"X-MCP-Readonly", "maybe"}});
    ASSERT_TRUE(flag);
    EXPECT_EQ(flag->status, 400);
    EXPECT_NE(flag->body.find("X-MCP-Readonly must be true or false"), std::string::npos);
}

}  // namespace
