// agency-mcp: an MCP tool server over an SEO agency's gateway.
//   agency-mcp serve                       MCP over stdio
//   agency-mcp serve --http --listen ADDR  MCP over Streamable HTTP at /mcp
//   agency-mcp sample-gateway --listen ADDR   the built-in sample gateway, standalone
//   agency-mcp keys add --name N --scopes read,write
//   agency-mcp tools-doc                   the tool reference (docs/tools.md) on stdout
#include <charconv>
#include <cstdint>
#include <csignal>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "server/http_transport.hpp"
#include "server/keys.hpp"
#include "server/mcp_server.hpp"
#include "server/stdio_transport.hpp"
#include "tools/action_tools.hpp"
#include "tools/registry.hpp"
#include "tools/schemas.hpp"
#include "tools/tool_docs.hpp"

namespace {

std::string env_or(const char* name, std::string fallback = {}) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

// "HOST:PORT", "[V6]:PORT" or ":PORT"
std::pair<std::string, int> parse_listen(const std::string& listen) {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) throw CLI::ValidationError("--listen", "expected HOST:PORT");
    std::string host = listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "127.0.0.1";
    int port = 0;
    try {
        port = std::stoi(listen.substr(colon + 1));
    } catch (const std::exception&) {
        throw CLI::ValidationError("--listen", "the port is not a number: " + listen);
    }
    if (port < 0 || port > 65535) throw CLI::ValidationError("--listen", "port out of range");
    return {host, port};
}

// A positive whole number for a count option (from the command line or the environment
// variable `env`); anything else is refused with one clear message before the server starts.
CLI::Validator positive_count(const std::string& env) {
    return CLI::Validator(
        [env](std::string& value) -> std::string {
            int n = 0;
            const char* end = value.data() + value.size();
            auto [p, ec] = std::from_chars(value.data(), end, n);
            if (ec != std::errc() || p != end || n <= 0)
                return "must be a positive whole number (at most " +
                       std::to_string(std::numeric_limits<int>::max()) + "), got \"" + value +
                       "\" (from the option or $" + env + ")";
            return {};
        },
        "POSITIVE");
}

void setup_logging(const std::string& level) {
    // stderr only: in stdio mode stdout carries protocol messages.
    auto logger = spdlog::stderr_color_mt("agency-mcp");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    spdlog::set_level(spdlog::level::from_str(level));
}

std::string read_secret_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::string value;
    std::getline(in, value);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    return value;
}

// glibc's per-thread arenas give memory back after nearly every call (madvise, then page faults
// and TLB shootdowns to take it again): in the benchmark that was a fifth of the server's CPU.
// Fixed thresholds keep a little freed memory for reuse and stop the dynamic mmap threshold
// from chasing page-sized bodies; two arenas (not 8 per core) keep what is kept small.
void tune_malloc() {
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 2 * 1024 * 1024);
    mallopt(M_TOP_PAD, 256 * 1024);
}

// Start-up touches ~200 fresh heap pages, and on a virtual machine each first touch is a trip
// to the hypervisor (~10 us here). One MADV_POPULATE_WRITE (Linux 5.14+; elsewhere a no-op)
// maps the heap start-up will use in one call; freed, it stays in the heap's top for reuse
// (under M_TRIM_THRESHOLD, so it is not given back).
void prefault_heap() {
#ifdef MADV_POPULATE_WRITE
    constexpr std::size_t kStartupHeap = 768 * 1024;  // under M_MMAP_THRESHOLD: from the heap
    void* block = std::malloc(kStartupHeap);
    if (block == nullptr) return;
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<std::uintptr_t>(block) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(block) + kStartupHeap) & ~(page - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
    std::free(block);
#endif
}

// Parses every embedded tool schema (a seventh of a cold start's instructions) on a thread of its
// own while main opens the state database and waits on the gateway check; registration then
// finds them parsed. A schema that fails to parse is left for registration to report.
std::jthread warm_schemas() {
    return std::jthread([] {
        try {
            // Last to first: registration, on the main thread, asks for them roughly first to
            // last, so the two threads meet rather than parse the same schemas.
            const auto& all = agency::tools::embedded_schemas();
            for (auto it = all.rbegin(); it != all.rend(); ++it) agency::tools::schema(it->name);
        } catch (const std::exception&) {
        }
    });
}

// Every open connection is a file descriptor: take the hard limit (the soft one is often
// 1024), and keep the connection bound under it with room for the rest of the process.
std::size_t fit_connections_to_fd_limit(std::size_t wanted) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
        ::getrlimit(RLIMIT_NOFILE, &limit);
    }
    constexpr rlim_t reserve = 128;  // state database, gateway connections, logs
    if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted + reserve) return wanted;
    const std::size_t fits = limit.rlim_cur > 2 * reserve ? limit.rlim_cur - reserve : limit.rlim_cur / 2;
    spdlog::warn("only {} file descriptors allowed: at most {} HTTP connections (not {})",
                 limit.rlim_cur, fits, wanted);
    return fits;
}

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

void wait_for_signal() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// The MCP server with every tool registered over the gateway at `gateway_url`; when that is
// empty, over the built-in sample gateway, started into `sample` (which must outlive it).
std::unique_ptr<agency::mcp::Server> make_tool_server(
    std::string gateway_url, const std::string& api_key,
    std::unique_ptr<agency::sample::Server>& sample,
    std::shared_ptr<agency::tools::ActionRuntime> actions = nullptr,
    std::chrono::seconds discovery_refresh = std::chrono::seconds(0),
    std::size_t max_waiting_on_clients = agency::mcp::ServerOptions{}.max_waiting_on_clients) {
    if (gateway_url.empty()) {
        sample = std::make_unique<agency::sample::Server>(
            std::make_shared<agency::sample::Gateway>());
        sample->start("127.0.0.1", 0);
        gateway_url = sample->base_url();
    }
    agency::gateway::Config gateway_config;
    gateway_config.base_url = gateway_url;
    gateway_config.api_key = api_key;
    // Waits for the gateway's answers (the spec suggests 10-30 s for generation actions).
    const auto seconds_env = [](const char* name, std::chrono::milliseconds fallback) {
        const std::string text = env_or(name);
        if (text.empty()) return fallback;
        std::size_t used = 0;
        long value = 0;
        try {
            value = std::stol(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != text.size() || value < 1 || value > 3600) {
            throw std::runtime_error(std::string(name) + " must be a whole number of seconds "
                                     "from 1 to 3600 (got '" + text + "')");
        }
        return std::chrono::milliseconds(value * 1000);
    };
    gateway_config.read_timeout =
        seconds_env("AGENCY_GATEWAY_READ_TIMEOUT_S", gateway_config.read_timeout);
    gateway_config.action_timeout =
        seconds_env("AGENCY_GATEWAY_ACTION_TIMEOUT_S", gateway_config.action_timeout);
    auto gateway = std::make_shared<agency::gateway::Client>(gateway_config);
    {
        // Fail fast with one clear line (unreachable host, rejected key): the retry warnings of
        // a normal read would only bury it.
        auto quiet = spdlog::default_logger()->level();
        spdlog::set_level(spdlog::level::critical);
        try {
            gateway->check();
        } catch (...) {
            spdlog::set_level(quiet);
            throw;
        }
        spdlog::set_level(quiet);
    }

    agency::mcp::ServerOptions server_options;
    server_options.state_secret = env_or("AGENCY_SERVER_SECRET");
    server_options.max_waiting_on_clients = max_waiting_on_clients;
    // Task records live beside the jobs they wait on, so both survive a restart.
    if (actions) server_options.task_store = actions->shared_store();
    server_options.info.instructions =
        "Tools over an SEO agency's platform: read a client's rankings, audits, backlinks, "
        "citations, articles, calls and reports; run audits and generate content. Start with "
        "list_clients to find a client_id.";
    auto server = std::make_unique<agency::mcp::Server>(server_options);
    agency::tools::Settings tool_settings;
    tool_settings.secret = server_options.state_secret;
    auto toolbox = std::make_shared<agency::tools::Toolbox>(gateway, tool_settings);
    agency::tools::register_all(*server, toolbox, std::move(actions));
    agency::tools::watch_discovery(*server, toolbox, discovery_refresh);
    server->resume_tasks();
    return server;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"agency-mcp: MCP tools over the agency gateway (rankings, audits, content...)"};
    app.require_subcommand(1);
    std::string log_level = env_or("AGENCY_LOG_LEVEL", "info");
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off (stderr)")
        ->envname("AGENCY_LOG_LEVEL")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

    // serve
    auto* serve = app.add_subcommand("serve", "Run the MCP server (stdio by default)");
    bool http = false;
    bool read_only = false;
    std::string listen = "127.0.0.1:8787";
    std::string gateway_url;
    std::string api_key_file;
    std::string keys_file;
    std::size_t max_body = 4 * 1024 * 1024;
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> allowed_origins;
    std::string state_db;
    agency::tools::CreditSettings credits;
    serve->add_flag("--http", http, "Serve Streamable HTTP at /mcp instead of stdio");
    serve->add_option("--listen", listen, "HOST:PORT for --http (default 127.0.0.1:8787)");
    serve->add_flag("--read-only", read_only, "Hide and refuse every action tool");
    serve->add_option("--gateway-url", gateway_url,
                      "Gateway base URL (default: $AGENCY_GATEWAY_URL; none: the built-in "
                      "sample gateway)");
    serve->add_option("--api-key-file", api_key_file,
                      "File holding the gateway API key (default: $AGENCY_API_KEY)");
    serve->add_option("--keys-file", keys_file,
                      "HTTP callers' keys file (agency-mcp keys add); with keys, every HTTP "
                      "request needs one")
        ->envname("AGENCY_KEYS_FILE");
    serve->add_option("--max-body-bytes", max_body, "Largest accepted HTTP body or stdio line");
    serve->add_option("--allowed-host", allowed_hosts,
                      "Extra Host header names accepted over HTTP (DNS-rebinding protection)");
    serve->add_option("--allowed-origin", allowed_origins, "Extra Origins accepted over HTTP");
    serve->add_option("--state-db", state_db,
                      "SQLite file for jobs, drafts and idempotency records (default: "
                      "$XDG_STATE_HOME/agency-mcp/state.db or ~/.local/state/agency-mcp/state.db)")
        ->envname("AGENCY_STATE_DB");
    int discovery_refresh_s = 60;
    serve->add_option("--discovery-refresh", discovery_refresh_s,
                      "Seconds between reads of the gateway's discovery (0: never); when its "
                      "actions change, tools follow and clients are told (default 60)")
        ->envname("AGENCY_DISCOVERY_REFRESH_S")
        ->check(CLI::Range(0, 86400));
    serve->add_option("--max-actions-in-flight-per-client", credits.max_in_flight_per_client,
                      "Generation actions running at once for one client; more are refused "
                      "with reason rate_limited (default 2)")
        ->envname("AGENCY_MAX_ACTIONS_IN_FLIGHT")
        ->check(positive_count("AGENCY_MAX_ACTIONS_IN_FLIGHT"));
    serve->add_option("--max-actions-per-minute-per-client", credits.max_per_minute_per_client,
                      "Generation actions started per client per minute; more are refused with "
                      "reason rate_limited (default 20)")
        ->envname("AGENCY_MAX_ACTIONS_PER_MINUTE")
        ->check(positive_count("AGENCY_MAX_ACTIONS_PER_MINUTE"));

    // What HTTP clients may hold (issue 15): each bound refuses cleanly and keeps serving.
    agency::mcp::HttpOptions http_defaults;
    int max_connections = static_cast<int>(http_defaults.max_connections);
    int max_connections_per_address = static_cast<int>(http_defaults.max_connections_per_peer);
    int head_timeout_s = static_cast<int>(http_defaults.head_timeout.count() / 1000);
    int idle_timeout_s = static_cast<int>(http_defaults.idle_timeout.count());
    int max_streams = static_cast<int>(http_defaults.max_streams);
    int max_streams_per_session = static_cast<int>(http_defaults.max_streams_per_session);
    int max_sessions = static_cast<int>(http_defaults.max_sessions);
    int max_waiting_on_clients =
        static_cast<int>(agency::mcp::ServerOptions{}.max_waiting_on_clients);
    serve->add_option("--http-max-connections", max_connections,
                      "Open HTTP connections in all; at the bound the longest-idle one is "
                      "closed, or a new one gets 503 (default 4096)")
        ->envname("AGENCY_HTTP_MAX_CONNECTIONS")
        ->check(positive_count("AGENCY_HTTP_MAX_CONNECTIONS"));
    serve->add_option("--http-max-connections-per-address", max_connections_per_address,
                      "Open HTTP connections from one client address; more get 503 "
                      "(default 256)")
        ->envname("AGENCY_HTTP_MAX_CONNECTIONS_PER_ADDRESS")
        ->check(positive_count("AGENCY_HTTP_MAX_CONNECTIONS_PER_ADDRESS"));
    serve->add_option("--http-head-timeout", head_timeout_s,
                      "Seconds a client has to send a whole request head once it has begun; "
                      "then 408 and the connection is closed (default 10)")
        ->envname("AGENCY_HTTP_HEAD_TIMEOUT_S")
        ->check(CLI::Range(1, 3600));
    serve->add_option("--http-idle-timeout", idle_timeout_s,
                      "Seconds a kept-alive HTTP connection may wait for its next request "
                      "(default 5)")
        ->envname("AGENCY_HTTP_IDLE_TIMEOUT_S")
        ->check(CLI::Range(1, 3600));
    serve->add_option("--http-max-streams", max_streams,
                      "Streamed (SSE) answers open at once; more get 503 (default 256)")
        ->envname("AGENCY_HTTP_MAX_STREAMS")
        ->check(positive_count("AGENCY_HTTP_MAX_STREAMS"));
    serve->add_option("--http-max-streams-per-session", max_streams_per_session,
                      "Streamed answers open at once on one legacy session (default 16)")
        ->envname("AGENCY_HTTP_MAX_STREAMS_PER_SESSION")
        ->check(positive_count("AGENCY_HTTP_MAX_STREAMS_PER_SESSION"));
    serve->add_option("--http-max-sessions", max_sessions,
                      "Legacy sessions open at once; initialize gets 503 beyond (default 4096)")
        ->envname("AGENCY_HTTP_MAX_SESSIONS")
        ->check(positive_count("AGENCY_HTTP_MAX_SESSIONS"));
    serve->add_option("--max-waiting-on-clients", max_waiting_on_clients,
                      "Calls that may wait at once for a client's answer (elicitation, "
                      "sampling, roots); one more gets an error at once (default 64)")
        ->envname("AGENCY_MAX_WAITING_ON_CLIENTS")
        ->check(positive_count("AGENCY_MAX_WAITING_ON_CLIENTS"));

    // sample-gateway
    auto* sample_cmd =
        app.add_subcommand("sample-gateway", "Serve the built-in sample gateway (API explorer)");
    std::string sample_listen = "127.0.0.1:8788";
    std::size_t bulk_rows = 0;
    sample_cmd->add_option("--listen", sample_listen, "HOST:PORT (default 127.0.0.1:8788)");
    sample_cmd->add_option("--bulk-keyword-rows", bulk_rows,
                           "Add client demo-bulk with this many keyword rows (benchmarks)");
    std::vector<std::string> sample_faults;
    sample_cmd->add_option("--fault", sample_faults,
                           "Inject faults for the whole run (repeatable): TARGET:MODE[:PERCENT[:N]]"
                           " with TARGET an action, a resource or '*', MODE one of fail_before, "
                           "fail_after, status_error, rate_limit, slow, drop, reset, PERCENT the "
                           "chance per request (default 100), N the delay in ms (slow), "
                           "Retry-After s (rate_limit) or status_code (status_error). Counters: "
                           "GET /_control/stats");
    bool bare_records = false;
    sample_cmd->add_flag("--bare-records", bare_records,
                         "Rows only as the spec describes them (no deployed_at or sent_at; "
                         "index_url records nothing)");

    // keys
    auto* keys_cmd = app.add_subcommand("keys", "Manage API keys for HTTP callers");
    keys_cmd->require_subcommand(1);
    auto* keys_add = keys_cmd->add_subcommand("add", "Create a key and print it once");
    std::string key_name;
    std::vector<std::string> key_scopes{"read"};
    keys_add->add_option("--name", key_name, "Who the key is for")->required();
    keys_add->add_option("--scopes", key_scopes, "read and/or write")->delimiter(',');
    keys_add->add_option("--keys-file", keys_file, "Keys file")->envname("AGENCY_KEYS_FILE");

    // tools-doc
    auto* tools_doc_cmd = app.add_subcommand(
        "tools-doc",
        "Print the Markdown tool reference generated from the tool definitions "
        "(build/agency-mcp tools-doc > docs/tools.md)");

    CLI11_PARSE(app, argc, argv);
    tune_malloc();
    if (*serve) prefault_heap();
    std::jthread schemas_warmed;
    if (*serve || *tools_doc_cmd) schemas_warmed = warm_schemas();
    setup_logging(log_level);

    try {
        if (*keys_add) {
            std::string path = keys_file.empty() ? agency::mcp::KeyStore::default_path() : keys_file;
            std::string key = agency::mcp::KeyStore::add(path, key_name, key_scopes);
            std::cout << key << std::endl;
            std::cerr << "created key \"" << key_name << "\" in " << path
                      << "; it is shown only this once" << std::endl;
            return 0;
        }

        if (*sample_cmd) {
            auto [host, port] = parse_listen(sample_listen);
            agency::sample::Options options;
            options.bulk_keyword_rows = bulk_rows;
            options.bare_records = bare_records;
            std::vector<agency::sample::Fault> faults;
            for (const auto& text : sample_faults) {
                try {
                    faults.push_back(agency::sample::parse_fault(text));
                } catch (const std::invalid_argument& e) {
                    throw CLI::ValidationError("--fault", e.what());
                }
            }
            auto gw = std::make_shared<agency::sample::Gateway>(options);
            for (auto& fault : faults) gw->inject(std::move(fault));
            agency::sample::Server server(gw);
            server.start(host, port);
            std::cout << server.base_url() << std::endl;
            spdlog::info("sample gateway (sample data, no key needed) at {}", server.base_url());
            wait_for_signal();
            return 0;
        }

        if (*tools_doc_cmd) {
            // The same registration as serve, seen by a caller with every scope.
            std::unique_ptr<agency::sample::Server> sample_server;
            auto server = make_tool_server(env_or("AGENCY_GATEWAY_URL"), env_or("AGENCY_API_KEY"),
                                           sample_server);
            std::cout << agency::tools::tools_markdown(*server, agency::mcp::Principal{})
                      << std::flush;
            return std::cout ? 0 : 1;
        }

        // serve
        std::unique_ptr<agency::sample::Server> sample_server;
        if (gateway_url.empty()) gateway_url = env_or("AGENCY_GATEWAY_URL");
        std::string api_key =
            api_key_file.empty() ? env_or("AGENCY_API_KEY") : read_secret_file(api_key_file);
        agency::tools::ActionSettings action_settings;
        action_settings.state_db =
            state_db.empty() ? agency::tools::Store::default_path() : state_db;
        action_settings.credits = credits;
        auto actions = std::make_shared<agency::tools::ActionRuntime>(action_settings);
        spdlog::info("state database: {}", action_settings.state_db);
        auto server_ptr = make_tool_server(gateway_url, api_key, sample_server, actions,
                                           std::chrono::seconds(discovery_refresh_s),
                                           static_cast<std::size_t>(max_waiting_on_clients));
        agency::mcp::Server& server = *server_ptr;
        if (sample_server)
            spdlog::warn("no AGENCY_GATEWAY_URL set: serving SAMPLE DATA from the built-in sample "
                         "gateway at {}",
                         sample_server->base_url());

        agency::mcp::Principal principal;
        if (read_only) principal.scopes = {"read"};

        if (!http) {
            agency::mcp::StdioOptions options;
            options.max_message_bytes = max_body;
            options.principal = principal;
            return agency::mcp::serve_stdio(server, options);
        }

        auto [host, port] = parse_listen(listen);
        agency::mcp::HttpOptions options;
        options.host = host;
        options.port = port;
        options.max_body_bytes = max_body;
        options.allowed_hosts = allowed_hosts;
        options.allowed_origins = allowed_origins;
        options.anonymous = principal;
        options.max_connections =
            fit_connections_to_fd_limit(static_cast<std::size_t>(max_connections));
        options.max_connections_per_peer = static_cast<std::size_t>(max_connections_per_address);
        options.head_timeout = std::chrono::seconds(head_timeout_s);
        options.idle_timeout = std::chrono::seconds(idle_timeout_s);
        options.max_streams = static_cast<std::size_t>(max_streams);
        options.max_streams_per_session = static_cast<std::size_t>(max_streams_per_session);
        options.max_sessions = static_cast<std::size_t>(max_sessions);
        if (!keys_file.empty())
            options.keys = std::make_shared<agency::mcp::KeyStore>(
                agency::mcp::KeyStore::load(keys_file));
        agency::mcp::HttpTransport transport(server, options);
        transport.start();
        spdlog::info("MCP over Streamable HTTP at {}", transport.url());
        wait_for_signal();
        transport.stop();
        return 0;
    } catch (const agency::gateway::Error& e) {
        spdlog::critical("{}", e.what());
        return 1;
    } catch (const std::exception& e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
}
