// Issue 30, item 6: an idempotency key whose call ended without storing its result (the process
// stopped, or the state store failed, between the gateway POST and storing what happened). Past
// the claim's lease a repeat reads the gateway for the record instead of answering "still
// running" for ever, and never sends the action again. The lost call is staged as it happens:
// the key is claimed in the store, and a gateway client of its own (the process that died)
// sends the POST.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "state/store.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/text.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

namespace {

using namespace agency::testing::tool_names;
using json = nlohmann::json;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;

using agency::testing::has;

struct LostCalls : agency::testing::ActionToolHarness {
    explicit LostCalls(std::chrono::seconds lease) : ActionToolHarness({}, settings_for(lease)) {}

    static ActionSettings settings_for(std::chrono::seconds lease) {
        ActionSettings settings;
        settings.stale_claim = lease;
        settings.await_first_call = 0ms;
        return settings;
    }

    // The lost call's claim: what the pipeline stores for `args` (without the key) by "local".
    void claim(const std::string& tool, const json& args, const std::string& key) {
        ASSERT_FALSE(rt->store().claim_idempotency("local", tool, key,
                                                   agency::state::args_digest(args), 600s));
    }
    // The lost call's POST, from a process of its own.
    json post_from_elsewhere(const std::string& action, const std::string& client_id,
                             const json& fields) {
        agency::gateway::Config config;
        config.base_url = h->gateway_server->base_url();
        agency::gateway::Client other(config);
        return other.act(action, client_id, fields).data;
    }
};

json with_key(json args, const std::string& key) {
    args["idempotency_key"] = key;
    return args;
}

TEST(LostCalls, ARepeatPastTheLeaseAnswersWithTheRecordTheGatewayShows) {
    LostCalls o(-1s);  // every claim is past its lease
    const json args = {{"client_id", kDental}, {"keyword", "lost crown repair"}};
    o.claim("generate_article", args, "k-lost-1");
    const json made = o.post_from_elsewhere("generate_blog", kDental, {{"keyword", "lost crown repair"}});
    ASSERT_EQ(o.posts("generate_blog"), 1u);

    ToolReply r = o.h->call("generate_article", with_key(args, "k-lost-1"));
    ASSERT_FALSE(r.is_error()) << r.response.dump();
    const std::string id = made["id"].is_string() ? made["id"].get<std::string>() : made["id"].dump();
    EXPECT_EQ(r.structured().value("article_id", ""), id) << r.response.dump();
    EXPECT_TRUE(has(r.structured().value("note", ""), "ended without its answer being kept"))
        << r.structured().dump();
    EXPECT_EQ(o.posts("generate_blog"), 1u) << "the lost call's action was sent again";

    // The key now holds that result: a further repeat is a plain replay of it.
    ToolReply again = o.h->call("generate_article", with_key(args, "k-lost-1"));
    EXPECT_EQ(again.structured().value("replayed", false), true) << again.response.dump();
    EXPECT_EQ(again.structured()["article_id"], r.structured()["article_id"]);
    EXPECT_EQ(o.posts("generate_blog"), 1u);
}

TEST(LostCalls, NoRecordAtTheGatewayIsOutcomeUnknownWithHowToCheckAndStaysSo) {
    LostCalls o(-1s);
    const json args = {{"client_id", kDental}, {"keyword", "never sent"}};
    o.claim("generate_article", args, "k-lost-2");
    for (int round = 0; round < 2; ++round) {
        ToolReply r = o.h->call("generate_article", with_key(args, "k-lost-2"));
        EXPECT_EQ(r.reason(), "outcome_unknown") << r.response.dump();
        const std::string message = r.tool_error().value("message", "");
        EXPECT_TRUE(has(message, "no record of it")) << message;
        EXPECT_TRUE(has(message, "resource=blogs")) << message;
        EXPECT_TRUE(has(message, "new idempotency_key")) << message;
        EXPECT_FALSE(has(message, "shortly")) << message;
    }
    EXPECT_EQ(o.posts("generate_blog"), 0u) << "a lost call is never re-sent under its key";
}

TEST(LostCalls, WithinItsLeaseTheFirstCallIsStillRunningAndTheAnswerSaysUntilWhen) {
    LostCalls o(600s);
    const json args = {{"client_id", kDental}, {"keyword", "still running"}};
    o.claim("generate_article", args, "k-live");
    ToolReply r = o.h->call("generate_article", with_key(args, "k-live"));
    EXPECT_EQ(r.reason(), "in_progress") << r.response.dump();
    EXPECT_TRUE(has(r.tool_error().value("message", ""), "checks the gateway for its record"))
        << r.response.dump();
    EXPECT_EQ(o.posts("generate_blog"), 0u);
}

// A tool that previews answers a known key before any preview (the replay stage): a lost call
// is resolved there too, without asking anyone to confirm again.
TEST(LostCalls, TheReplayStageOfAPreviewingToolResolvesALostCall) {
    LostCalls o(-1s);
    const json args = {{"client_id", kPlumbing}, {"keyword", "burst pipe"}};
    o.claim("generate_article", args, "k-lost-3");
    o.post_from_elsewhere("generate_blog", kPlumbing, {{"keyword", "burst pipe"}});
    ToolReply r = o.h->call("generate_article", with_key(args, "k-lost-3"));
    ASSERT_FALSE(r.is_error()) << r.response.dump();
    EXPECT_NE(r.structured().value("status", ""), "confirmation_required") << r.response.dump();
    EXPECT_FALSE(r.structured().value("article_id", "").empty()) << r.response.dump();
    EXPECT_EQ(o.posts("generate_blog"), 1u);
}

TEST(LostCalls, ALostDeployIsFoundByTheArticlesState) {
    LostCalls o(-1s);
    ToolReply made = o.h->call("generate_article", {{"client_id", kDental}, {"keyword", "inlays"}});
    const std::string article = made.structured().value("article_id", "");
    ASSERT_FALSE(article.empty()) << made.response.dump();
    const json args = {{"client_id", kDental}, {"article_id", article}};
    o.claim("deploy_article", args, "k-lost-4");
    o.post_from_elsewhere("deploy_blog", kDental, {{"post_id", article}});
    ToolReply r = o.h->call("deploy_article", with_key(args, "k-lost-4"));
    ASSERT_FALSE(r.is_error()) << r.response.dump();
    EXPECT_EQ(r.structured().value("status", ""), "published") << r.response.dump();
    EXPECT_TRUE(has(r.structured().value("note", ""), "showing its effect")) << r.response.dump();
    EXPECT_EQ(o.posts("deploy_blog"), 1u);
}

}  // namespace
