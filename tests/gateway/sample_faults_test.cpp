// The sample gateway's faults for long runs (the soak): a fault on for a share of the requests,
// the reset fault (nothing done, the connection cut), the --fault syntax, and the counters
// behind GET /_control/stats (POSTs, actions that ran, and the same body run twice).
#include <httplib.h>

#include <memory>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway/sample/sample_gateway.hpp"

namespace {

using agency::sample::Fault;
using agency::sample::FaultMode;
using agency::sample::parse_fault;
using json = nlohmann::json;

struct Running {
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server srv{gw};
    int port = srv.start();
    httplib::Client http{"127.0.0.1", port};

    int act(const json& body) {
        auto r = http.Post("/api", body.dump(), "application/json");
        return r ? r->status : 0;  // 0: the connection was cut
    }
    int read(const std::string& resource) {
        auto r = http.Get("/api?resource=" + resource + "&client_id=demo-law&limit=1");
        return r ? r->status : 0;
    }
};

TEST(SampleFaults, ParsesTheCommandLineForm) {
    const Fault f = parse_fault("*:fail_after:1.5");
    EXPECT_EQ(f.target, "*");
    EXPECT_EQ(f.mode, FaultMode::fail_after);
    EXPECT_DOUBLE_EQ(f.percent, 1.5);
    EXPECT_EQ(f.count, 0);  // no limit
    EXPECT_EQ(parse_fault("generate_blog:slow:5:4000").delay_ms, 4000);
    EXPECT_EQ(parse_fault("*:rate_limit:2:3").retry_after_s, 3);
    EXPECT_EQ(parse_fault("blogs:reset").percent, 100);
    for (const char* bad : {"", "*", "*:explode", "*:drop:0", "*:drop:101", "*:drop:x",
                            "*:slow:5:-1", "*:slow:5:1:2"}) {
        EXPECT_THROW(parse_fault(bad), std::invalid_argument) << bad;
    }
}

TEST(SampleFaults, APercentFaultStaysOnForItsShare) {
    Running g;
    g.gw->inject(parse_fault("keywords:fail_before:50"));
    int failed = 0;
    for (int i = 0; i < 200; ++i) failed += g.read("keywords") == 500;
    EXPECT_GT(failed, 60);
    EXPECT_LT(failed, 140);
    EXPECT_EQ(g.read("blogs"), 200);  // another target is not hit
    EXPECT_EQ(g.gw->stats().faults.at("fail_before"), static_cast<std::uint64_t>(failed));
}

TEST(SampleFaults, ResetDoesNothingAndCutsTheConnection) {
    Running g;
    g.gw->inject({.target = "generate_blog", .mode = FaultMode::reset});
    const auto before = g.gw->rows("blogs", "demo-law").size();
    EXPECT_EQ(g.act({{"action", "generate_blog"}, {"client_id", "demo-law"}, {"keyword", "k"}}),
              0);
    EXPECT_EQ(g.gw->rows("blogs", "demo-law").size(), before);
    const auto stats = g.gw->stats();
    EXPECT_EQ(stats.posts.at("generate_blog"), 1u);
    EXPECT_EQ(stats.executions.count("generate_blog"), 0u);
}

TEST(SampleFaults, StatsCountActionsThatRanTwice) {
    Running g;
    const json blog{{"action", "generate_blog"}, {"client_id", "demo-law"}, {"keyword", "twice"}};
    const json audit{{"action", "seo_audit"}, {"client_id", "demo-law"},
                     {"url", "https://summitlawgroup.example/"}};
    EXPECT_EQ(g.act(blog), 200);
    EXPECT_EQ(g.act(audit), 200);
    EXPECT_EQ(g.act(audit), 200);  // retry-safe: not a duplicate
    g.gw->inject({.target = "generate_blog", .mode = FaultMode::fail_before});
    EXPECT_EQ(g.act(blog), 500);  // did not run: not a duplicate
    auto stats = g.gw->stats();
    EXPECT_EQ(stats.posts.at("generate_blog"), 2u);
    EXPECT_EQ(stats.executions.at("generate_blog"), 1u);
    EXPECT_TRUE(stats.duplicate_executions.empty());
    g.gw->inject({.target = "generate_blog", .mode = FaultMode::fail_after});
    EXPECT_EQ(g.act(blog), 500);  // ran again: a duplicate
    stats = g.gw->stats();
    EXPECT_EQ(stats.duplicate_executions.at("generate_blog"), 1u);
    ASSERT_EQ(stats.duplicate_examples.size(), 1u);
    EXPECT_NE(stats.duplicate_examples[0].find("twice"), std::string::npos);

    // The same over the control path, for a soak in another process.
    auto r = g.http.Get("/_control/stats");
    ASSERT_TRUE(r);
    const json body = json::parse(r->body);
    EXPECT_EQ(body["duplicate_executions"], 1);
    EXPECT_EQ(body["posts_by_action"]["seo_audit"], 2);
    EXPECT_EQ(body["faults_by_mode"]["fail_after"], 1);
    g.gw->clear_log();
    EXPECT_TRUE(g.gw->stats().posts.empty());

    // A percent fault over the control path.
    auto added = g.http.Post("/_control/faults",
                             json{{"target", "blogs"}, {"mode", "fail_before"},
                                  {"percent", 100}, {"count", 0}}.dump(),
                             "application/json");
    ASSERT_TRUE(added);
    EXPECT_EQ(added->status, 200) << added->body;
    EXPECT_EQ(g.read("blogs"), 500);
    EXPECT_EQ(g.read("blogs"), 500);
    auto refused = g.http.Post("/_control/faults",
                               json{{"target", "*"}, {"mode", "drop"}, {"percent", 120}}.dump(),
                               "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
}

}  // namespace

// Hostile rows and lists (issue 30): a read's one row nested N deep or N members wide, and
// discovery listing N more resources.
TEST(SampleFaults, HostileModesShapeTheAnswer) {
    EXPECT_EQ(parse_fault("keywords:deep:100:500").size, 500);
    EXPECT_EQ(parse_fault("keywords:wide").size, 1'000'000);
    Running g;
    g.gw->inject(parse_fault("keywords:deep:100:70"));
    g.gw->inject(parse_fault("backlinks:wide:100:300"));
    g.gw->inject(parse_fault(":many_resources:100:1000"));
    auto deep = g.http.Get("/api?resource=keywords&client_id=demo-law");
    ASSERT_TRUE(deep);
    EXPECT_NE(deep->body.find(std::string(69, '[') + "1"), std::string::npos);
    EXPECT_EQ(deep->body.find(std::string(70, '[')), std::string::npos);  // 70 levels, the row one
    auto wide = g.http.Get("/api?resource=backlinks&client_id=demo-law");
    ASSERT_TRUE(wide);
    const json page = json::parse(wide->body);
    ASSERT_EQ(page["data"].size(), 1u);
    EXPECT_EQ(page["data"][0].size(), 300u);
    auto discovery = g.http.Get("/api");
    ASSERT_TRUE(discovery);
    EXPECT_GT(json::parse(discovery->body)["resources"].size(), 1000u);
    EXPECT_EQ(g.read("blogs"), 200);  // other reads are whole
}
