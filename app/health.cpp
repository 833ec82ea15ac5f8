// /healthz and /readyz (see health.hpp).
#include "app/health.hpp"

#include <algorithm>
#include <optional>

#include "base/log.hpp"
#include "base/metrics.hpp"
#include "base/thread_set.hpp"

namespace agency::app {

namespace {

constexpr const char* kOk = "ok";

mcp::HttpReply json_reply(int status, const nlohmann::json& body) {
    mcp::HttpReply reply;
    reply.status = status;
    reply.body = body.dump();
    reply.headers = {{"Cache-Control", "no-store"}};
    return reply;
}

}  // namespace

Health::Health(ReadinessChecks checks) : checks_(std::move(checks)) {
    if (!checks_.clock) checks_.clock = &base::Clock::system();
    metrics_hook_ = base::metrics::add_render_hook([this] { set_gauges(); });
}

Health::~Health() { base::metrics::remove_render_hook(metrics_hook_); }

// What a dashboard or an alert reads without probing /readyz itself: readiness as a balancer
// sees it, and when the gateway's discovery last answered (wall time, for `time() - x`).
void Health::set_gauges() {
    static auto* ready = new base::metrics::GaugeFamily(
        "agency_mcp_ready", "1 while /readyz answers 200 (nothing excluded), else 0", {});
    static auto* discovered = new base::metrics::GaugeFamily(
        "agency_gateway_last_discovery_timestamp_seconds",
        "Unix time at which the gateway's discovery last answered; 0 before the first", {});
    ready->set({}, readiness().ready ? 1 : 0);
    double at = 0;
    if (checks_.gateway) {
        const auto health = checks_.gateway->discovery_health();
        if (health.since_answer)
            at = static_cast<double>(checks_.clock->unix_ms() - health.since_answer->count()) /
                 1000.0;
    }
    discovered->set({}, at);
}

// Whether the store answers at a schema this build reads, and can write. What went wrong goes
// to the log (a path or a server's words); the probe's answer says only which check failed.
std::string Health::check_store() {
    if (!checks_.store) return kOk;
    std::lock_guard lock(store_mutex_);
    const std::int64_t now = checks_.clock->steady_ms();
    if (store_checked_ms_ >= 0 && now - store_checked_ms_ < 1000) return store_result_;
    try {
        // 0: an SQLite file not created yet (the first write creates it at the right version).
        const int version = checks_.store->schema_version();
        store_result_ = version == 0 || version == state::kSchemaVersion
                            ? kOk
                            : "schema version " + std::to_string(version) +
                                  ", this agency-mcp needs " +
                                  std::to_string(state::kSchemaVersion);
    } catch (const std::exception& e) {
        say_store_failure(std::string("readiness: the state store did not answer: ") + e.what());
        store_result_ = "not answering (see the server log)";
    }
    // Answering is not enough: on a full disk (or a read-only file, or a PostgreSQL that went
    // read-only) reads answer while every write fails. One tiny committed write tells.
    if (store_result_ == kOk) {
        try {
            checks_.store->probe_write();
        } catch (const std::exception& e) {
            say_store_failure(std::string("readiness: the state store cannot write: ") + e.what());
            store_result_ = "cannot write (see the server log)";
        }
    }
    if (store_result_ == kOk && !store_said_.empty()) {
        log::info("readiness: the state store answers and writes again");
        store_said_.clear();
    }
    store_checked_ms_ = checks_.clock->steady_ms();
    return store_result_;
}

// A failure is logged when it begins or changes, not at every probe: a balancer probing every
// 2 s would write 1,800 lines an hour of an outage (issue 49). Under store_mutex_.
void Health::say_store_failure(const std::string& line) {
    if (line == store_said_) return;
    log::warn("{}", line);
    store_said_ = line;
}

// Whether the gateway's discovery answered at its last fetch, and recently enough.
std::string Health::check_gateway() const {
    if (!checks_.gateway) return kOk;
    const auto health = checks_.gateway->discovery_health();
    if (!health.failure.empty()) return "its discovery failed at the last refresh (see the log)";
    if (!health.since_answer) return "its discovery has not answered yet";
    const auto stale = 2 * checks_.discovery_period + checks_.refresh_time;
    if (checks_.discovery_period.count() > 0 && *health.since_answer > stale)
        return "its discovery has not answered for " +
               std::to_string(health.since_answer->count() / 1000) + " s";
    return kOk;
}

// The `exclude` values of a query ("exclude=store&exclude=gateway" or "exclude=store,gateway");
// nullopt when one names no check that may be left out.
static std::optional<std::vector<std::string>> excluded_checks(const std::string& query) {
    std::vector<std::string> names;
    std::size_t start = 0;
    while (start <= query.size()) {
        const auto end = std::min(query.find('&', start), query.size());
        const std::string pair = query.substr(start, end - start);
        start = end + 1;
        if (pair.rfind("exclude=", 0) != 0) continue;
        std::size_t from = 8;
        while (from <= pair.size()) {
            const auto comma = std::min(pair.find(',', from), pair.size());
            std::string name = pair.substr(from, comma - from);
            from = comma + 1;
            if (name != "store" && name != "gateway") return std::nullopt;
            names.push_back(std::move(name));
        }
    }
    return names;
}

// A thread that could not be started lately (the process's or the service's thread limit):
// not ready while it lasts, so that a balancer sends the calls elsewhere while the burst's
// threads leave (base/thread_set.hpp).
std::string Health::check_threads() {
    const auto ago = base::thread_shortage(std::chrono::seconds(10));
    if (!ago) return kOk;
    return "could not start a thread " + std::to_string(ago->count() / 1000) +
           " s ago (at the thread limit): requests that need one are refused until threads "
           "free up";
}

Health::Report Health::readiness(const std::vector<std::string>& excluded) {
    nlohmann::json checks = {{"started", started_ ? kOk : "starting"},
                             {"draining", draining_ ? "draining: no new calls" : kOk},
                             {"store", check_store()},
                             {"gateway", check_gateway()},
                             {"threads", check_threads()}};
    nlohmann::json failed = nlohmann::json::array();
    for (const auto& [name, result] : checks.items())
        if (result != kOk && std::find(excluded.begin(), excluded.end(), name) == excluded.end())
            failed.push_back(name);
    Report report;
    report.ready = failed.empty();
    report.body = {{"status", report.ready ? "ready" : "not ready"}, {"checks", checks}};
    if (!report.ready) report.body["failed"] = failed;
    if (!excluded.empty()) report.body["excluded"] = excluded;
    // One log line per change of the checks (a balancer probes every few seconds), whatever
    // a probe excluded.
    bool all_ok = true;
    for (const auto& [name, result] : checks.items()) all_ok = all_ok && result == kOk;
    const std::string summary = all_ok ? std::string("ready") : checks.dump();
    std::lock_guard lock(log_mutex_);
    if (summary != last_logged_) {
        if (!last_logged_.empty() || !all_ok) {
            if (all_ok)
                log::info("readiness: ready");
            else
                log::warn("readiness: not ready: {}", summary);
        }
        last_logged_ = summary;
    }
    return report;
}

std::vector<mcp::HttpRoute> Health::routes() {
    mcp::HttpRoute live;
    live.path = "/healthz";
    // Liveness: the process answers. It touches nothing (a stuck store or gateway is not
    // cured by a restart, and a restart loses the calls in flight).
    live.handler = [](const mcp::HttpRequestView&) {
        return json_reply(200, {{"status", "alive"}});
    };
    mcp::HttpRoute ready;
    ready.path = "/readyz";
    ready.handler = [this](const mcp::HttpRequestView& request) {
        const auto excluded = excluded_checks(request.query);
        if (!excluded)
            return json_reply(400, {{"error", "exclude= takes store and/or gateway, e.g. "
                                              "/readyz?exclude=store,gateway"}});
        auto report = readiness(*excluded);
        return json_reply(report.ready ? 200 : 503, report.body);
    };
    // A balancer's check names the machine by its address; the answers are no secret.
    live.any_host = ready.any_host = true;
    return {std::move(live), std::move(ready)};
}

}  // namespace agency::app
