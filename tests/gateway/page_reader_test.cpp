// gateway::PageReader against the sample gateway on a loopback port: pages read ahead arrive
// once each and in the order asked for, a wrong guess costs a read but never a wrong page, and
// failures reach the caller without leaving anything behind.
#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "gateway/client.hpp"
#include "gateway/page_reader.hpp"
#include "gateway/sample/sample_gateway.hpp"

namespace {

using namespace agency;

struct Bulk {
    std::shared_ptr<sample::Gateway> gw =
        std::make_shared<sample::Gateway>(sample::Options{.bulk_keyword_rows = 3500});
    sample::Server server{gw};
    std::unique_ptr<gateway::Client> client;

    Bulk() {
        server.start("127.0.0.1", 0);
        gateway::Config config;
        config.base_url = server.base_url();
        config.backoff_base = std::chrono::milliseconds(2);
        config.max_attempts = 2;
        client = std::make_unique<gateway::Client>(config);
    }

    gateway::ReadQuery query() const {
        return {.resource = "keywords",
                .client_id = sample::kBulkClient,
                .limit = 1000,
                .order = "tracked_at",
                .direction = "desc"};
    }

    // The offset the page says it starts at, and how many rows it holds.
    std::pair<std::int64_t, std::size_t> look(gateway::Page page) {
        const auto walked = client->walk(page, {}, [](const gateway::Row&) { return true; });
        return {page.pagination.offset, walked.rows};
    }

    std::size_t gets() const { return gw->count_requests("GET", "keywords"); }
};

TEST(PageReader, PagesReadAheadArriveOnceEachInOrder) {
    Bulk b;
    {
        gateway::PageReader pages(*b.client, b.query(), {});
        EXPECT_EQ(b.look(pages.read(0)), std::make_pair(std::int64_t{0}, std::size_t{1000}));
        // From here on the total is known: the next two pages are fetched ahead.
        EXPECT_EQ(b.look(pages.read(1000, 3500)), std::make_pair(std::int64_t{1000}, std::size_t{1000}));
        EXPECT_EQ(b.look(pages.read(2000, 3500)), std::make_pair(std::int64_t{2000}, std::size_t{1000}));
        EXPECT_EQ(b.look(pages.read(3000, 3500)), std::make_pair(std::int64_t{3000}, std::size_t{500}));
    }
    EXPECT_EQ(b.gets(), 4u);
}

TEST(PageReader, AWrongGuessCostsAReadNeverAWrongPage) {
    Bulk b;
    {
        gateway::PageReader pages(*b.client, b.query(), {});
        b.look(pages.read(0, 3500));
        EXPECT_EQ(b.look(pages.read(700, 3500)), std::make_pair(std::int64_t{700}, std::size_t{1000}));
    }
    // 0; 1000 and 2000 read ahead, dropped; 700; then 1700 and 2700 read ahead and abandoned
    // (cancelled, so they may not have left).
    EXPECT_GE(b.gets(), 4u);
    EXPECT_LE(b.gets(), 6u);
}

TEST(PageReader, FailuresReachTheCallerAndNothingHangs) {
    Bulk b;
    b.gw->inject({.target = "keywords", .mode = sample::FaultMode::fail_before, .count = 100});
    const auto started = std::chrono::steady_clock::now();
    {
        gateway::PageReader pages(*b.client, b.query(), {});
        EXPECT_THROW(pages.read(0), gateway::Error);
        // Read ahead, failed in the background: the failure comes with the page asked for.
        EXPECT_THROW(pages.read(1000, 3500), gateway::Error);
        try {
            pages.read(2000, 3500);
            ADD_FAILURE() << "a page read ahead that failed was handed over";
        } catch (const gateway::Error& e) {
            EXPECT_EQ(e.reason(), gateway::ErrorReason::upstream);
        }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(PageReader, AStoppedCallAbandonsThePageReadAhead) {
    Bulk b;
    std::stop_source stop;
    gateway::PageReader pages(*b.client, b.query(), stop.get_token());
    b.look(pages.read(0, 3500));
    stop.request_stop();
    try {
        b.look(pages.read(1000, 3500));
        // The page read ahead may have arrived before the stop; then it is the right one.
    } catch (const gateway::Error& e) {
        EXPECT_EQ(e.reason(), gateway::ErrorReason::cancelled);
    }
    EXPECT_THROW(pages.read(2500), gateway::Error);  // nothing new leaves after the stop
}

}  // namespace
