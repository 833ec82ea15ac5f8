// Every tool, the action tools with an ActionRuntime of the test's own, over the sample gateway
// on loopback: ok() for a call that must succeed, eliciting_call() for a modern call from a
// client that can elicit, posts() for what reached the gateway.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "tests/support/action_store.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

#include <gtest/gtest.h>

namespace agency::testing {

using tools::ActionRuntime;
using tools::ActionSettings;

// Every tool over `rt`, on a sample gateway made with `options`; `key` is sent as the gateway
// API key (the sample is put in keyed mode by the test itself).
struct ActionToolHarness {
    std::shared_ptr<ActionRuntime> rt;
    tools::ToolCatalog catalog;  // what registration says of each tool
    std::unique_ptr<ToolHarness> h;

    explicit ActionToolHarness(agency::sample::Options options = {}, ActionSettings settings = {},
                               std::string key = {})
        : rt(std::make_shared<ActionRuntime>(agency::testing::with_store(std::move(settings)))) {
        h = std::make_unique<ToolHarness>(
            std::move(options), agency::tools::Settings{},
            [this](agency::mcp::Server& server,
                   const std::shared_ptr<agency::tools::Toolbox>& box) {
                catalog = agency::tools::register_all(server, box, rt);
            },
            [key](agency::gateway::Config& config) { config.api_key = key; });
    }
    // Workers stop before the gateway they talk to.
    ~ActionToolHarness() { rt->audits().stop(); }

    std::size_t posts(const std::string& action) const {
        return h->gw->count_requests("POST", action);
    }
    std::set<std::string> listed() {
        std::set<std::string> names;
        for (const auto& t : h->tools()) names.insert(t["name"].get<std::string>());
        return names;
    }
    json ok(const std::string& tool, const json& args) {
        ToolReply r = h->call(tool, args);
        EXPECT_FALSE(r.is_error() || r.rpc_error) << r.response.dump().substr(0, 800);
        return r.structured();
    }
    // A modern call from a client that can elicit.
    json eliciting_call(const std::string& tool, const json& args, const json& responses = nullptr,
                        const json& state = nullptr) {
        return h->eliciting_call(tool, args, responses, state);
    }
};

}  // namespace agency::testing
