// /healthz and /readyz for load balancers and supervisors (docs/operations.md, "Health").
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "gateway/client.hpp"
#include "state/store.hpp"
#include "transport/http_routes.hpp"

namespace agency::app {

struct ReadinessChecks {
    std::shared_ptr<state::Store> store;        // null: no store check
    std::shared_ptr<gateway::Client> gateway;   // null: no gateway check
    // The discovery refresher's period (0: off, so only the start-up check is known) and the
    // time one refresh may take: discovery older than 2 periods plus that is stale.
    std::chrono::milliseconds discovery_period{0};
    std::chrono::milliseconds refresh_time{30'000};
    const base::Clock* clock = nullptr;  // null: base::Clock::system()
};

// What the process says of itself. Liveness needs nothing; readiness is the store answering at
// its schema version and committing a tiny write (Store::probe_write), the gateway's discovery
// answering at its last refresh (and recently), no thread that failed to start in the last 10 s,
// and the server neither starting nor draining.
class Health {
public:
    // Also sets, at each /metrics scrape, agency_mcp_ready (1 when readiness holds, nothing
    // excluded) and agency_gateway_last_discovery_timestamp_seconds (0 before the first).
    explicit Health(ReadinessChecks checks);
    ~Health();
    Health(const Health&) = delete;
    Health& operator=(const Health&) = delete;
    void set_started() { started_ = true; }
    void set_draining() { draining_ = true; }

    struct Report {
        bool ready = false;
        nlohmann::json body;  // {"status", "checks": {name: "ok" | why}, "failed": [names]}
    };
    // `excluded`: checks reported but not counted ("store", "gateway"): a balancer in front of
    // several instances leaves out what they all share, so that an outage of it does not take
    // every instance out at once.
    Report readiness(const std::vector<std::string>& excluded = {});
    // GET /healthz and GET /readyz[?exclude=store,gateway] (HEAD too), JSON, never cached.
    std::vector<mcp::HttpRoute> routes();

private:
    std::string check_store();
    std::string check_gateway() const;
    static std::string check_threads();

    ReadinessChecks checks_;
    std::atomic<bool> started_{false};
    std::atomic<bool> draining_{false};
    // The store is asked at most once a second (a probe every few seconds from each balancer).
    std::mutex store_mutex_;
    std::int64_t store_checked_ms_ = -1;
    std::string store_result_;
    std::string store_said_;  // the store's last failure logged ("" once it answers and writes)
    void say_store_failure(const std::string& line);
    // Logged when readiness changes, not at every probe.
    std::mutex log_mutex_;
    std::string last_logged_;
    int metrics_hook_ = -1;
    void set_gauges();
};

}  // namespace agency::app
