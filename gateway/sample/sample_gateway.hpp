// The built-in sample gateway: the spec's "API explorer". Every read and every action of
// ../shared/spec/gateway-api.md on deterministic sample data, over real HTTP, so the gateway
// client, the tools and the tests exercise exactly the code path a real deployment uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace agency::sample {

// Sample clients always present (ids are stable; tests rely on them):
//   "demo-plumbing"  Acme Plumbing (auto-deploy on)
//   "demo-dental"    Bright Smile Dental
//   "demo-law"       Summit Law Group
// plus "demo-bulk" when Options::bulk_keyword_rows > 0 (that many keyword rows).
inline constexpr const char* kAutoDeployClient = "demo-plumbing";
inline constexpr const char* kBulkClient = "demo-bulk";

struct Options {
    std::uint64_t seed = 42;
    std::size_t bulk_keyword_rows = 0;  // 0: no demo-bulk client
    // The `<vendor>_calls` resource name (the spec's second call resource).
    std::string call_vendor = "callrail";
};

// Keyed mode: keys carry an agency and scopes; clients are linked to agencies.
struct ApiKey {
    std::string key;
    std::string agency;
    std::vector<std::string> scopes;  // "read", "write"
    bool expired = false;
};

enum class FaultMode {
    fail_before,   // HTTP 500 before anything is created
    fail_after,    // the action runs (record created), then HTTP 500
    status_error,  // HTTP 200 with status:"error" and Fault::status_code; nothing created
    rate_limit,    // HTTP 429 with Retry-After: Fault::retry_after_s; nothing created
    slow,          // sleeps Fault::delay_ms, then answers normally (action runs after the sleep)
    drop,          // the action runs, then the connection is cut mid-response
};

struct Fault {
    std::string target;  // an action name, a resource name, or "*" for every request
    FaultMode mode = FaultMode::fail_before;
    int count = 1;             // how many matching requests it hits
    int status_code = 502;     // status_error: the body's status_code
    int retry_after_s = 1;     // rate_limit
    int delay_ms = 0;          // slow
};

struct LoggedRequest {
    std::string method;     // "GET", "POST", other
    std::string target;     // resource name, action name, "" for discovery
    std::string client_id;  // "" when absent
    std::string detail;     // query string (GET) or body (POST)
    int status = 0;         // HTTP status sent (0 for a dropped connection)
    std::string fault;      // fault mode applied, "" if none
    std::chrono::system_clock::time_point at;
};

// Data and request handling, independent of sockets. Thread-safe.
class Gateway {
public:
    explicit Gateway(Options options = {});
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    // Auth: explorer mode (no key) is the default; keyed mode enforces 401/403.
    void set_keyed(bool keyed);
    void add_key(ApiKey key);
    void link_client(const std::string& client_id, const std::string& agency);

    // Fault injection: faults queue in order; each applies to the next `count` matching requests.
    void inject(Fault fault);
    void clear_faults();

    // Request log (every request the HTTP surface received, control path excluded).
    std::vector<LoggedRequest> request_log() const;
    std::size_t count_requests(const std::string& method, const std::string& target) const;
    void clear_log();

    // Direct view of stored rows (no HTTP, not logged): for test assertions.
    nlohmann::json rows(const std::string& resource, const std::string& client_id) const;
    void set_auto_deploy(const std::string& client_id, bool on);
    // Withdraws an action from discovery (POSTs for it then fail as unknown), or offers it
    // again: a deployment whose features change while the tool server runs.
    void set_action_offered(const std::string& action, bool offered);

    // Mounts the gateway at `base_path` (e.g. "/api") and the loopback-only control path at
    // "/_control" (POST /_control/faults, DELETE /_control/faults, GET/DELETE /_control/requests).
    void mount(httplib::Server& server, const std::string& base_path);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Serves a Gateway over HTTP on a background thread.
class Server {
public:
    explicit Server(std::shared_ptr<Gateway> gateway);
    ~Server();  // stops
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds host:port (port 0: an ephemeral port), starts serving, returns the bound port.
    // Throws std::runtime_error when the address cannot be bound.
    int start(const std::string& host = "127.0.0.1", int port = 0);
    void stop();
    // e.g. "http://127.0.0.1:41234/api"
    std::string base_url() const;
    Gateway& gateway();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace agency::sample
