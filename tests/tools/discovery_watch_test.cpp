// The tool list follows the gateway's live discovery: a withdrawn action hides its tool and
// legacy sessions hear notifications/tools/list_changed; offered again, it comes back.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

namespace {

using agency::testing::ToolHarness;
using json = nlohmann::json;
using namespace std::chrono_literals;

std::set<std::string> tool_names(ToolHarness& h) {
    std::set<std::string> names;
    for (const auto& t : h.tools()) names.insert(t["name"].get<std::string>());
    return names;
}

TEST(DiscoveryWatch, WithdrawnActionHidesItsToolAndTellsLegacySessions) {
    auto rt = std::make_shared<agency::tools::ActionRuntime>(
        agency::testing::with_store(agency::tools::ActionSettings{}));
    ToolHarness h({}, {}, [rt](agency::mcp::Server& server,
                               const std::shared_ptr<agency::tools::Toolbox>& box) {
        agency::tools::register_all(server, box, rt);
        agency::tools::watch_discovery(server, box, 20ms);
    });
    std::mutex mutex;
    std::vector<std::string> heard;
    auto session = h.server->create_session("watcher");
    session->notify = [&](const std::string& m) {
        std::lock_guard lock(mutex);
        heard.push_back(m);
    };
    session->initialized = true;
    h.server->register_session(session);
    auto heard_count = [&] {
        std::lock_guard lock(mutex);
        return std::count_if(heard.begin(), heard.end(), [](const std::string& m) {
            return m.find("notifications/tools/list_changed") != std::string::npos;
        });
    };

    ASSERT_TRUE(tool_names(h).count("run_local_grid_scan"));
    h.gw->set_action_offered("run_grid_search", false);
    (void)agency::testing::eventually([&] { return heard_count() != 0; }, 3000ms, 10ms);
    EXPECT_EQ(heard_count(), 1);
    EXPECT_FALSE(tool_names(h).count("run_local_grid_scan"));
    EXPECT_TRUE(tool_names(h).count("generate_article")) << "only the withdrawn action's tool hides";
    auto call = h.call("run_local_grid_scan", {{"client_id", "demo-dental"}, {"keyword", "dentist"}});
    EXPECT_EQ(call.rpc_error, -32602) << "a hidden tool is an unknown tool";
    EXPECT_EQ(h.gw->count_requests("POST", "run_grid_search"), 0u);

    h.gw->set_action_offered("run_grid_search", true);
    (void)agency::testing::eventually([&] { return heard_count() >= 2; }, 3000ms, 10ms);
    EXPECT_EQ(heard_count(), 2);
    EXPECT_TRUE(tool_names(h).count("run_local_grid_scan"));
    h.server.reset();  // stops the refresher before the session and gateway go
    rt->audits().stop();
}

}  // namespace
