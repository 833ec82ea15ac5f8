// The command line: what each subcommand takes, with the environment variables behind its
// options. Parsing only; app/commands.cpp runs what was asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/sample/sample_gateway.hpp"
#include "tools/pipeline/jobs.hpp"
#include "transport/http_transport.hpp"

// CLI11 stays inside app/cli.cpp: its App's layout depends on what a translation unit included
// before it, so it is never a member other files see.
namespace CLI {
class App;
}

namespace agency::app {

// OAuth 2.1 for HTTP callers (docs/auth.md): on when an issuer and a resource are given.
struct OAuthArgs {
    std::string issuer;    // --oauth-issuer, $AGENCY_OAUTH_ISSUER
    std::string resource;  // --oauth-resource, $AGENCY_OAUTH_RESOURCE: this server's /mcp URL
    std::string read_scope = "agency:read";
    std::string write_scope = "agency:write";
    // RFC 7662 for opaque tokens: the client id here, its secret in
    // $AGENCY_OAUTH_INTROSPECTION_SECRET (never on the command line).
    std::string introspection_client_id;
    // Client scopes (issue 35, docs/auth.md): the claim naming the clients a caller reaches,
    // a group claim mapped to clients by a JSON file, what a token naming none reaches
    // ("none" or "all"), and the claim holding the caller's action budget.
    std::string clients_claim;       // --oauth-clients-claim, $AGENCY_OAUTH_CLIENTS_CLAIM
    std::string client_groups_file;  // --oauth-client-groups, $AGENCY_OAUTH_CLIENT_GROUPS
    std::string groups_claim = "groups";  // --oauth-groups-claim, $AGENCY_OAUTH_GROUPS_CLAIM
    std::string unclaimed_clients = "none";  // --oauth-unclaimed-clients
    std::string budget_claim;        // --oauth-budget-claim, $AGENCY_OAUTH_BUDGET_CLAIM
    bool enabled() const { return !issuer.empty() || !resource.empty(); }
};

struct ServeArgs {
    bool http = false;
    bool read_only = false;
    bool require_gateway = false;  // --require-gateway: exit when the gateway is away at start
    std::string listen = "127.0.0.1:8787";
    std::string metrics_listen;  // HOST:PORT of a /metrics-only listener; "" = none
    std::string gateway_url;
    std::string api_key_file;
    std::string keys_file;
    std::size_t max_body = 4 * 1024 * 1024;
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> allowed_origins;
    std::string state_db;
    std::string state_url;  // postgresql://…: the store several instances share
    int discovery_refresh_s = 60;
    int drain_timeout_s = 30;  // SIGTERM: how long the calls in flight may take to finish
    std::string confirm = "any";  // "elicitation-only": no confirmation_id confirms
    bool no_ui = false;  // --no-ui: no MCP Apps view is linked, even for clients that render them
    tools::CreditSettings credits;
    // Action budgets (tools/pipeline/budgets.hpp): generation actions per caller and window; -1:
    // none.
    std::int64_t monthly_actions = -1;
    std::string budget_window = "month";
    // What HTTP clients may hold: each bound refuses cleanly and keeps serving.
    mcp::HttpOptions http_limits;
    int max_waiting_on_clients = 64;
    int max_waiting_per_caller = 16;
    // Tasks running at once, in all and per caller (mcp::ServerOptions::max_live_tasks).
    int max_tasks = 256;
    int max_tasks_per_caller = 32;
    // One gateway operation's whole time (attempts and waits), under common client timeouts.
    double call_timeout_s = 30;
    // The most one gateway answer may be (gateway::Config::max_response_bytes).
    std::uint64_t gateway_max_response_bytes = std::uint64_t{16} << 20;
    // The text block beside structuredContent: "auto", "full" or "summary".
    std::string structured_text = "auto";
    std::string structured_content = "auto";
    // --toolsets, --tools, --exclude-tools (tools/kit/toolsets.hpp).
    mcp::ToolSelection selection;
    // Tool calls per principal (server/rate_limit.hpp): "off", "N" or "N/minute", "N/second";
    // empty: the transport's default (kHttpRateLimit over HTTP, off over stdio).
    std::string rate_limit;
    int rate_limit_burst = 120;
    OAuthArgs oauth;
    // How long one attempt of a gateway read or action may wait for its answer (seconds;
    // gateway::Config's read_timeout and action_timeout).
    int gateway_read_timeout_s = 10;
    int gateway_action_timeout_s = 20;
    // With --state-url: how long an instance's claim on a job or task lasts unless renewed.
    int state_lease_ms = 15'000;
};

// --rate-limit's default over HTTP. Over stdio there is none by default: the one caller is the
// user who started the process (an agent's bulk loop is not an abuse to bound), and the
// per-client credit limits still bound what actions cost the gateway.
inline constexpr const char* kHttpRateLimit = "600/minute";

struct SampleArgs {
    std::string listen = "127.0.0.1:8788";
    std::vector<std::string> faults;
    sample::Options gateway;  // the modes the flags set (--bare-records, ...)
};

// state migrate | export | import: one store, by file or URL, and the JSON-lines file.
struct StateArgs {
    std::string state_db;
    std::string state_url;
    std::string file;  // export: where to write (stdout when empty); import: what to read
};

// write-log [prune]: reading the write log, and its explicit retention.
struct WriteLogArgs {
    std::string state_db;
    std::string state_url;
    std::string since;  // a date, a time, or an age (7d, 12h, 30m)
    std::string client_id;
    std::string tool;
    std::string caller;  // --caller: a principal ("key:NAME", "oauth:ISSUER SUB", "local") or a key's name
    std::string format = "jsonl";  // jsonl | csv
    std::size_t limit = 0;         // 0: every row
    std::string before;            // prune: rows before this date or time go
};

struct KeysArgs {
    std::string name;
    std::vector<std::string> scopes{"read"};
    std::string keys_file;
    std::vector<std::string> clients;        // add/update --clients (empty: every client)
    bool all_clients = false;                // update --all-clients
    std::optional<std::int64_t> monthly_actions;  // add/update --monthly-actions
    bool no_monthly_actions = false;         // update --no-monthly-actions
    // list: where the budget use is read (the server's store and window); "" = the defaults
    std::string state_db;
    std::string state_url;
    std::string budget_window = "month";
    std::string import_from;  // import: the CSV or JSON file ('-': stdin)
    std::string out;          // import: where the new keys go (stdout when empty)
};

enum class Command {
    serve,
    sample_gateway,
    keys_add,
    keys_import,
    keys_list,
    keys_remove,
    keys_rotate,
    keys_update,
    tools_doc,
    state_migrate,
    state_export,
    state_import,
    state_backup,
    write_log,
    write_log_prune
};

class CommandLine {
public:
    CommandLine();
    ~CommandLine();
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;
    // The command to run; nullopt when there is none to run (help was shown, or an error
    // printed): the process then exits with exit_code().
    std::optional<Command> parse(int argc, char** argv);
    int exit_code() const { return exit_code_; }

    std::string log_level;
    bool readme_section = false;  // tools-doc --readme
    bool settings_section = false;  // tools-doc --settings
    // docs/operations.md's generated table: every option of serve (and the global ones), its
    // variable, its group and what it does, from the definitions above (tools-doc --settings).
    std::string settings_table() const;
    std::string log_file;  // empty: logs to stderr
    std::string log_format = "text";  // or "json"
    ServeArgs serve;
    SampleArgs sample;
    KeysArgs keys;
    StateArgs state;
    WriteLogArgs write_log;

private:
    void add_serve();
    void add_http_limits();
    void add_call_limits();
    void add_sample_gateway();
    void add_keys();
    void add_key_commands(CLI::App& keys_cmd);
    void add_global_options();
    void add_serve_footer();
    void add_oauth();
    // Exit code 2 and a list of the valid commands when the command named is not one of them;
    // nullopt when the names are right (or there is none: CLI11 says what is missing).
    std::optional<int> refuse_unknown_command(int argc, char** argv) const;
    void add_answer_options();
    void add_tool_selection();
    void add_state();
    void add_write_log();
    void add_rate_limit();
    void add_tuning();
    // serve --help shows the options a first run needs; the groups below only with
    // serve --help-all (and in docs/operations.md's table).
    void hide_groups_unless_help_all(int argc, char** argv);
    // " (from $VAR ...)" when the value CLI11 refused in `message` came from the variable of
    // the option the message names; "" when it came from the command line.
    std::string value_source(std::string_view message, int argc, char** argv) const;
    static constexpr const char* kHttpLimits = "HTTP limits";
    static constexpr const char* kOAuth = "OAuth";
    static constexpr const char* kTuning = "Tuning";

    std::unique_ptr<CLI::App> app_;
    int exit_code_ = 0;
    CLI::App* serve_cmd_ = nullptr;
    CLI::App* sample_cmd_ = nullptr;
    CLI::App* keys_cmd_ = nullptr;
    CLI::App* keys_add_cmd_ = nullptr;
    CLI::App* keys_import_cmd_ = nullptr;
    CLI::App* keys_list_cmd_ = nullptr;
    CLI::App* keys_remove_cmd_ = nullptr;
    CLI::App* keys_rotate_cmd_ = nullptr;
    CLI::App* keys_update_cmd_ = nullptr;
    CLI::App* tools_doc_cmd_ = nullptr;
    CLI::App* state_cmd_ = nullptr;
    CLI::App* state_migrate_cmd_ = nullptr;
    CLI::App* state_export_cmd_ = nullptr;
    CLI::App* state_import_cmd_ = nullptr;
    CLI::App* state_backup_cmd_ = nullptr;
    CLI::App* write_log_cmd_ = nullptr;
    CLI::App* write_log_prune_cmd_ = nullptr;
    // The HTTP limits as the options hold them (whole numbers), copied into serve.http_limits.
    int max_connections_ = 0, max_connections_per_address_ = 0, head_timeout_s_ = 0,
        idle_timeout_s_ = 0, max_streams_ = 0, max_streams_per_session_ = 0, max_sessions_ = 0,
        max_sessions_per_caller_ = 0, max_streams_per_caller_ = 0, workers_ = 0, read_workers_ = 0,
        worker_share_ = 0;
};

// "HOST:PORT", "[V6]:PORT" or ":PORT" (host 127.0.0.1); throws std::invalid_argument naming
// --listen.
std::pair<std::string, int> parse_listen(const std::string& listen);

}  // namespace agency::app
