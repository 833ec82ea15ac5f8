#include "app/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "base/log.hpp"

#include "app/health.hpp"
#include "app/oauth_setup.hpp"
#include "app/process.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "server/mcp_server.hpp"
#include "server/telemetry.hpp"
#include "state/sqlite_store.hpp"
#include "state/write_log_spool.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/kit/toolsets.hpp"
#include "tools/registry.hpp"
#include "tools/surface/tool_docs.hpp"
#include "transport/http_transport.hpp"
#include "transport/keys.hpp"
#include "transport/metrics_listener.hpp"
#include "transport/stdio_transport.hpp"

namespace agency::app {

namespace {

// The spec's catalog as the built-in sample gateway's discovery tells it: what tools/list offers
// while a gateway that could not be reached at start has not answered yet.
std::shared_ptr<const gateway::Discovery> spec_discovery() {
    sample::Server sample(std::make_shared<sample::Gateway>());
    sample.start("127.0.0.1", 0);
    gateway::Config config;
    config.base_url = sample.base_url();
    return gateway::Client(config).discovery();
}

// Why the gateway could not be reached at start ("" when it answered, or when it cannot be
// waited for: the server then exits with the error).
struct GatewayAway {
    std::string why;
};

// The gateway client, checked: an unreachable host or a rejected key fails here with one clear
// line, before the retry warnings of a normal read could bury it. An unreachable gateway (a
// laptop before its VPN, a gateway restarting) is waited for unless `require`: `away` says why.
std::shared_ptr<gateway::Client> connect_gateway(gateway::Config config, bool require,
                                                 GatewayAway& away) {
    // Waits for the gateway's answers (the spec suggests 10-30 s for generation actions).
    auto client = std::make_shared<gateway::Client>(config);
    const auto level = log::current_level();
    log::set_level(log::Level::critical);
    try {
        client->check();
    } catch (const gateway::Error& e) {
        log::set_level(level);
        // Waiting mends a gateway away, not a certificate refused (nor a key, nor a URL).
        const bool refused = e.data().is_object() && e.data().value("certificate_refused", false);
        if (require || refused || e.reason() != gateway::ErrorReason::unavailable) throw;
        away.why = e.what();
        return client;
    } catch (...) {
        log::set_level(level);
        throw;
    }
    log::set_level(level);
    return client;
}

// The URL as logged: any user:password@ is dropped (the API key is never logged).
std::string shown_url(const std::string& url) {
    const auto scheme = url.find("://");
    const auto start = scheme == std::string::npos ? 0 : scheme + 3;
    const auto at = url.find('@', start);
    if (at == std::string::npos || url.find_first_of("/?#", start) < at) return url;
    return url.substr(0, start) + url.substr(at + 1);
}

// One start-up line: the gateway answered, and which actions its discovery offers.
void log_gateway_answered(gateway::Client& client, const std::string& url, bool sample) {
    const auto discovery = client.discovery();
    std::string names;
    std::size_t shown = 0;
    for (const auto& action : discovery->actions) {
        if (shown == 8) {
            names += ", ...";
            break;
        }
        names += (shown++ ? ", " : "") + action.action;
    }
    log::info("{} {} answered: {} action(s){}, {} resource(s)",
              sample ? "the built-in SAMPLE gateway" : "gateway", shown_url(url),
              discovery->actions.size(), names.empty() ? "" : " (" + names + ")",
              discovery->resources.size());
}

struct ToolServerSetup {
    std::string gateway_url;  // empty: the built-in sample gateway
    std::string api_key;
    std::shared_ptr<tools::ActionRuntime> actions;  // required: its store is opened here
    std::chrono::seconds discovery_refresh{0};
    std::size_t max_waiting_on_clients = mcp::ServerOptions{}.max_waiting_on_clients;
    std::size_t max_waiting_per_caller = mcp::ServerOptions{}.max_waiting_per_caller;
    std::size_t max_tasks = mcp::ServerOptions{}.max_live_tasks;  // already fitted to threads
    std::size_t max_tasks_per_caller = mcp::ServerOptions{}.max_live_tasks_per_caller;
    tools::ToolCatalog* catalog = nullptr;  // when set, receives what was registered
    std::shared_ptr<gateway::Client>* gateway = nullptr;  // when set, receives the client
    std::chrono::milliseconds call_timeout = gateway::Config{}.call_timeout;
    // One attempt's wait for the gateway's answer (the spec suggests 10-30 s for actions).
    std::chrono::milliseconds read_timeout = gateway::Config{}.read_timeout;
    std::chrono::milliseconds action_timeout = gateway::Config{}.action_timeout;
    std::size_t max_response_bytes = gateway::Config{}.max_response_bytes;
    // Gateway connections at once: as many as the calls that may run at once need.
    std::size_t read_connections = gateway::Config{}.read_connections;
    std::size_t action_connections = gateway::Config{}.action_connections;
    mcp::StructuredText structured_text = mcp::StructuredText::automatic;
    mcp::StructuredContent structured_content = mcp::StructuredContent::automatic;
    bool views = true;  // MCP Apps views linked for clients that render them (--no-ui: false)
    bool mark_sample_data = true;  // false for tools-doc: the reference is not an answer
    mcp::ToolSelection selection;  // the server's (--toolsets, --tools, --exclude-tools)
    bool read_only = false;
    bool require_gateway = false;  // exit when the gateway is away at start (else wait for it)
    mcp::RateLimit rate_limit;  // tool calls per principal (off for tools-doc)
};

// Sample data must not pass for a real agency's: said where the assistant sees it (title,
// instructions, every answer's _meta), not only in a log line on stderr.
constexpr const char* kSampleDataNote =
    "Every answer from this server is built-in sample data, not a real agency's: no gateway is "
    "configured (set AGENCY_GATEWAY_URL, and AGENCY_API_KEY if the gateway needs a key, then "
    "restart the server). ";

void mark_sample_data(mcp::ServerOptions& options) {
    options.info.title += " (sample data: no gateway configured)";
    options.result_meta = {{"agency-mcp/sample-data", true}};
}

// Names from the command line or the environment ("a, b" splits into " b"): trimmed, blanks
// dropped.
std::vector<std::string> trimmed_names(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& name : names) {
        const auto first = name.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        out.push_back(name.substr(first, name.find_last_not_of(" \t") - first + 1));
    }
    return out;
}

// The server's own tool selection (throws std::invalid_argument naming an unknown name) and the
// instructions written from the tools it leaves.
void select_tools(mcp::Server& server, const mcp::ToolSelection& selection, bool read_only,
                  bool sample_note) {
    server.set_tool_selection({.groups = trimmed_names(selection.groups),
                               .tools = trimmed_names(selection.tools),
                               .exclude = trimmed_names(selection.exclude)});
    mcp::Principal caller;
    if (read_only) caller.scopes = {"read"};
    std::string text = tools::server_instructions(server.visible_tools(caller), read_only);
    server.set_instructions(sample_note ? kSampleDataNote + text : text);
}

// The MCP server with every tool registered over the gateway; without a gateway URL, over the
// built-in sample gateway, started into `sample` (which must outlive the server).
std::unique_ptr<mcp::Server> make_tool_server(ToolServerSetup setup,
                                              std::unique_ptr<sample::Server>& sample) {
    if (!setup.actions) throw std::invalid_argument("make_tool_server: no ActionRuntime");
    const bool sample_data = setup.gateway_url.empty();
    if (sample_data) {
        sample = std::make_unique<sample::Server>(std::make_shared<sample::Gateway>());
        sample->start("127.0.0.1", 0);
        setup.gateway_url = sample->base_url();
    }
    gateway::Config config;
    config.base_url = setup.gateway_url;
    config.api_key = setup.api_key;
    config.call_timeout = setup.call_timeout;
    config.read_timeout = setup.read_timeout;
    config.action_timeout = setup.action_timeout;
    config.max_response_bytes = setup.max_response_bytes;
    config.read_connections = setup.read_connections;
    config.action_connections = setup.action_connections;
    GatewayAway away;
    auto gateway = connect_gateway(std::move(config), setup.require_gateway || sample_data, away);
    // Tools are listed from the spec's catalog meanwhile; once the gateway answers, clients
    // hear that the list changed (the hook is set when the server exists).
    struct AnswerHook {
        std::mutex mu;
        std::function<void()> fn;
    };
    auto hook = std::make_shared<AnswerHook>();
    if (away.why.empty()) {
        log_gateway_answered(*gateway, setup.gateway_url, sample_data);
    } else {
        log::warn("{}; serving anyway: the tools say so until it answers, and the server keeps "
                  "trying (--require-gateway exits instead)", away.why);
        gateway->serve_while_away(away.why, spec_discovery(), std::chrono::seconds(30), [hook] {
            std::lock_guard lock(hook->mu);
            if (hook->fn) hook->fn();
        });
    }
    if (setup.gateway) *setup.gateway = gateway;

    mcp::ServerOptions options;
    options.state_secret = env_or("AGENCY_SERVER_SECRET");
    options.max_waiting_on_clients = setup.max_waiting_on_clients;
    options.max_waiting_per_caller = setup.max_waiting_per_caller;
    options.max_live_tasks = setup.max_tasks;
    options.max_live_tasks_per_caller = setup.max_tasks_per_caller;
    // Task records live beside the jobs they wait on, so both survive a restart (and, in a
    // shared store, another instance's death).
    options.task_store = setup.actions->shared_store();
    options.instance_id = setup.actions->settings().sharing.instance_id;
    options.task_lease_ms = setup.actions->settings().sharing.lease.count();
    options.structured_text = setup.structured_text;
    options.structured_content = setup.structured_content;
    options.views = setup.views;
    options.rate_limit = setup.rate_limit;
    if (sample_data && setup.mark_sample_data) mark_sample_data(options);
    auto server = std::make_unique<mcp::Server>(options);
    tools::Settings tool_settings;
    tool_settings.secret = options.state_secret;
    tool_settings.clock = options.clock;
    auto toolbox = std::make_shared<tools::Toolbox>(gateway, tool_settings);
    tools::ToolCatalog registered = tools::register_all(*server, toolbox, std::move(setup.actions));
    if (setup.catalog) *setup.catalog = std::move(registered);
    select_tools(*server, setup.selection, setup.read_only,
                 sample_data && setup.mark_sample_data);
    tools::watch_discovery(*server, toolbox, setup.discovery_refresh);
    if (!away.why.empty()) {
        {
            std::lock_guard lock(hook->mu);
            hook->fn = [s = server.get()] { s->notify_tools_changed(); };
        }
        server->on_shutdown([gateway] { gateway->stop_discovery_refresh(); });
    }
    server->on_begin_work([s = server.get()] { s->resume_tasks(); });
    return server;
}

// --metrics-listen: GET /metrics on an address of its own (and then only there).
void start_metrics_listener(mcp::MetricsListener& listener, const std::string& address) {
    std::pair<std::string, int> where;
    try {
        where = parse_listen(address);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("--metrics-listen" + std::string(e.what()).substr(8));
    }
    listener.start(where.first, where.second);
    log::info("metrics (Prometheus text) at {}", listener.url());
}

int serve_http(mcp::Server& server, const ServeArgs& args, const mcp::Principal& anonymous,
               ReadinessChecks checks) {
    auto [host, port] = parse_listen(args.listen);
    mcp::HttpOptions options = args.http_limits;
    options.host = host;
    options.port = port;
    options.max_body_bytes = args.max_body;
    options.allowed_hosts = args.allowed_hosts;
    options.allowed_origins = args.allowed_origins;
    options.anonymous = anonymous;
    options.max_connections = fit_connections_to_fd_limit(options.max_connections);
    if (const auto keys = serving_keys_path(args.keys_file); !keys.empty())
        options.keys = open_keys_for_serving(keys);
    // --read-only holds for every HTTP caller: no key or token grants the write scope.
    options.authenticator = args.oauth.enabled()
                                ? oauth_for_serving(args.oauth, options.keys, args.read_only)
                                : mcp::key_authenticator(options.keys, args.read_only);
    Health health(std::move(checks));
    for (auto& route : health.routes()) options.routes.push_back(std::move(route));
    // /metrics beside /mcp, unless --metrics-listen gave it an address of its own.
    if (args.metrics_listen.empty()) options.routes.push_back(mcp::metrics_route());
    mcp::HttpTransport transport(server, options);
    catch_stop_signals();
    // A service: the jobs and tasks a previous run left are picked up now, not at a first call.
    server.begin_work();
    transport.start();
    health.set_started();
    log::info("MCP over Streamable HTTP at {}", transport.url());
    if (!options.authenticator->required())
        log::info("HTTP callers are NOT authenticated (loopback only): no keys file "
                  "(--keys-file or AGENCY_KEYS_FILE; `agency-mcp keys add` writes {} by default) "
                  "and no OAuth",
                  mcp::KeyStore::default_path());
    wait_for_signal();
    // Draining: /readyz says so (balancers stop sending), new calls get 503, the calls in
    // flight finish; jobs and task records stay in the store for the next start.
    health.set_draining();
    log::info("stopping: draining the calls in flight (up to {} s)", args.drain_timeout_s);
    if (!transport.drain(std::chrono::seconds(args.drain_timeout_s))) {
        // A call that ignores its cancellation would hold stop() (which joins its thread) for
        // ever; what it did is in the store as far as it got.
        log::error("exiting with calls still running");
        log::shutdown();
        std::_Exit(1);
    }
    transport.stop();
    log::info("stopped cleanly");
    return 0;
}

}  // namespace

int run_serve(const ServeArgs& args) {
    if (args.oauth.enabled() && !args.http)
        throw std::invalid_argument("--oauth-issuer and --oauth-resource apply to serve --http");
    if (args.oauth.enabled()) check_oauth(args.oauth);
    ToolServerSetup setup;
    setup.gateway_url = args.gateway_url;  // or $AGENCY_GATEWAY_URL (the parser's)
    setup.api_key =
        args.api_key_file.empty() ? env_or("AGENCY_API_KEY") : read_secret_file(args.api_key_file);
    tools::ActionSettings action_settings;
    if (!args.state_url.empty()) {
        require_shared_secret(env_or("AGENCY_SERVER_SECRET"));
        action_settings.sharing = {.instance_id = instance_name(),
                                   .lease = std::chrono::milliseconds(args.state_lease_ms)};
    }
    action_settings.store = open_state(args.state_url, args.state_db, state::SchemaUpgrade::migrate);
    action_settings.write_log_spool = state::WriteLogSpool::beside(args.state_url, args.state_db);
    action_settings.credits = args.credits;
    action_settings.elicitation_only = args.confirm == "elicitation-only";
    if (args.monthly_actions >= 0) action_settings.budgets.default_limit = args.monthly_actions;
    action_settings.budgets.window =
        tools::parse_budget_window(args.budget_window).value_or(tools::BudgetWindow::month);
    // A call holds its idempotency key for its reads and its POST, each within the call's
    // budget: past four budgets (and at least a minute) it cannot be running any more.
    action_settings.stale_claim = std::max(
        std::chrono::seconds(60),
        std::chrono::seconds(std::llround(4 * args.call_timeout_s)));
    setup.actions = std::make_shared<tools::ActionRuntime>(action_settings);
    log::info("state {}: {}{}", args.state_url.empty() ? "database" : "store (shared)",
              action_settings.store->describe(),
              args.state_url.empty() ? std::string()
                                     : ", this instance " + action_settings.sharing.instance_id);
    setup.discovery_refresh = std::chrono::seconds(args.discovery_refresh_s);
    setup.max_waiting_on_clients = static_cast<std::size_t>(args.max_waiting_on_clients);
    setup.max_waiting_per_caller = static_cast<std::size_t>(args.max_waiting_per_caller);
    setup.max_tasks_per_caller = static_cast<std::size_t>(args.max_tasks_per_caller);
    // Each running task holds a thread: keep room for the HTTP threads and everything else.
    setup.max_tasks = fit_tasks_to_thread_limit(
        static_cast<std::size_t>(args.max_tasks),
        (args.http ? args.http_limits.threads + args.http_limits.workers +
                         args.http_limits.read_workers
                   : 0) + 48);
    setup.call_timeout = std::chrono::milliseconds(std::llround(args.call_timeout_s * 1000));
    setup.read_timeout = std::chrono::seconds(args.gateway_read_timeout_s);
    setup.action_timeout = std::chrono::seconds(args.gateway_action_timeout_s);
    // Every worker of a lane may hold a gateway connection; reads also read pages ahead, and
    // audit jobs and tasks read too.
    const mcp::StdioOptions stdio_lanes;
    setup.read_connections =
        (args.http ? args.http_limits.read_workers : stdio_lanes.read_workers) + 16;
    setup.action_connections = args.http ? args.http_limits.workers : stdio_lanes.workers;
    setup.max_response_bytes = static_cast<std::size_t>(args.gateway_max_response_bytes);
    setup.selection = args.selection;
    setup.read_only = args.read_only;
    setup.require_gateway = args.require_gateway;
    const std::string rate = !args.rate_limit.empty() ? args.rate_limit
                             : args.http              ? std::string(kHttpRateLimit)
                                                      : std::string("off");
    setup.rate_limit = mcp::parse_rate_limit(rate, args.rate_limit_burst);
    if (setup.rate_limit.on())
        log::info(
            "rate limit: {} unit(s) a minute per caller, {} at once (a unit: one tool call, or "
            "one gateway read a resource, prompt or completion may make)",
            setup.rate_limit.per_minute,
            setup.rate_limit.burst > 0 ? setup.rate_limit.burst : setup.rate_limit.per_minute);
    setup.views = !args.no_ui;
    setup.structured_text = args.structured_text == "full"      ? mcp::StructuredText::full
                            : args.structured_text == "compact" ? mcp::StructuredText::compact
                            : args.structured_text == "summary" ? mcp::StructuredText::summary
                                                                : mcp::StructuredText::automatic;
    setup.structured_content = args.structured_content == "full"   ? mcp::StructuredContent::full
                               : args.structured_content == "lean" ? mcp::StructuredContent::lean
                                                                   : mcp::StructuredContent::automatic;

    ReadinessChecks checks{.store = action_settings.store,
                           .discovery_period = setup.discovery_refresh,
                           .refresh_time = setup.call_timeout};
    setup.gateway = &checks.gateway;
    std::unique_ptr<sample::Server> sample_server;
    auto server = make_tool_server(std::move(setup), sample_server);
    if (sample_server) {
        log::warn(
            "no AGENCY_GATEWAY_URL set: serving SAMPLE DATA from the built-in sample gateway at {}",
            sample_server->base_url());
    }
    mcp::Principal principal;
    if (args.read_only) principal.scopes = {"read"};
    const mcp::SessionGauge sessions(*server);  // /metrics reads the sessions open
    mcp::MetricsListener metrics;
    if (!args.metrics_listen.empty()) start_metrics_listener(metrics, args.metrics_listen);
    if (args.http) return serve_http(*server, args, principal, std::move(checks));
    mcp::StdioOptions options;
    options.max_message_bytes = args.max_body;
    options.principal = principal;
    options.drain_timeout = std::chrono::seconds(args.drain_timeout_s);
    options.stop_fd = catch_stop_signals();
    return mcp::serve_stdio(*server, options);
}

int run_sample_gateway(const SampleArgs& args) {
    auto [host, port] = parse_listen(args.listen);
    auto gateway = std::make_shared<sample::Gateway>(args.gateway);
    for (const auto& text : args.faults) {
        try {
            gateway->inject(sample::parse_fault(text));
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(std::string("--fault: ") + e.what());
        }
    }
    sample::Server server(gateway);
    server.start(host, port);
    std::cout << server.base_url() << std::endl;
    log::info("sample gateway (sample data, no key needed) at {}", server.base_url());
    wait_for_signal();
    return 0;
}

int run_tools_doc(bool readme) {
    // The same registration as serve, seen by a caller with every scope.
    ToolServerSetup setup;
    setup.gateway_url = env_or("AGENCY_GATEWAY_URL");
    setup.api_key = env_or("AGENCY_API_KEY");
    tools::ToolCatalog catalog;
    setup.catalog = &catalog;
    setup.mark_sample_data = false;
    setup.require_gateway = true;  // the reference is the gateway's, not the spec's catalog
    // The action tools' state in a private database that ends with the command.
    setup.actions = std::make_shared<tools::ActionRuntime>(
        tools::ActionSettings{.store = std::make_shared<state::SqliteStore>(":memory:")});
    std::unique_ptr<sample::Server> sample_server;
    auto server = make_tool_server(std::move(setup), sample_server);
    std::cout << (readme ? tools::readme_markdown(catalog)
                         : tools::tools_markdown(*server, mcp::Principal{}, catalog))
              << std::flush;
    return std::cout ? 0 : 1;
}

}  // namespace agency::app
