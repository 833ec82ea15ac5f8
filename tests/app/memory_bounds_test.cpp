// Memory bounds: what a bulk read holds while it runs. RSS says something only without
// sanitizers (they quarantine or shadow freed memory), so besides running in agency_tests
// (under ASan + UBSan, where only the rows and requests are checked), this file is built on its
// own in the plain tree as agency_memory_tests (label `memory`), where the bound is checked.
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/support/sanitized.hpp"

namespace {

using agency::gateway::Client;
using agency::gateway::Config;
using agency::gateway::ReadQuery;

long rss_kib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
}

}  // namespace

TEST(GatewayClient, ForEachRowStreamsBulkKeywordsInBoundedMemory) {
    constexpr std::size_t kRows = 100000;
    auto gw = std::make_shared<agency::sample::Gateway>(
        agency::sample::Options{.bulk_keyword_rows = kRows});
    agency::sample::Server srv(gw);
    srv.start();
    Config config;
    config.base_url = srv.base_url();
    Client c(config);
    ReadQuery q;
    q.resource = "keywords";
    q.client_id = agency::sample::kBulkClient;

    // The sample gateway makes its rows at the first read: make them before measuring.
    (void)gw->rows("clients", "");
    const long before = rss_kib();
    long peak = before;
    std::size_t rows = 0;
    std::size_t bytes = 0;
    const auto pagination = c.for_each_row(q, [&](std::string_view row) {
        if (rows % 997 == 0) {  // each handed-over text is exactly one JSON row
            const auto json = nlohmann::json::parse(row);
            EXPECT_TRUE(json.is_object());
            EXPECT_TRUE(json.contains("keyword"));
        }
        if (rows % 10000 == 0) peak = std::max(peak, rss_kib());
        ++rows;
        bytes += row.size();
        return true;
    });
    peak = std::max(peak, rss_kib());
    EXPECT_EQ(rows, kRows);
    EXPECT_EQ(pagination.total, static_cast<std::int64_t>(kRows));
    EXPECT_FALSE(pagination.has_more);
    EXPECT_EQ(gw->count_requests("GET", "keywords"), kRows / 1000);
    // Holding every row would grow memory by at least their total size. (Under sanitizers
    // freed memory is quarantined or shadowed, so RSS says nothing there.)
    const long growth_kib = peak - before;
    RecordProperty("rss_growth_kib", static_cast<int>(growth_kib));
#if !AGENCY_SANITIZED_BUILD
    EXPECT_LT(growth_kib, 30 * 1024);
    EXPECT_LT(static_cast<std::size_t>(growth_kib) * 1024, bytes / 2)
        << "rows total " << bytes << " bytes";
#endif
}
