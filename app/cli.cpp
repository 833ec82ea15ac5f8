// The command line: every command and option of `agency-mcp`, one add_* per command or group
// of options, each with its environment variable and help text. Long because the product has
// many options; what each command does when it runs is in commands.cpp and its neighbours.
#include "app/cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "app/cli_validators.hpp"
#include "app/process.hpp"
#include "tools/kit/toolsets.hpp"

namespace agency::app {

CLI::Validator positive_count() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            int n = 0;
            const char* end = value.data() + value.size();
            auto [p, ec] = std::from_chars(value.data(), end, n);
            if (ec != std::errc() || p != end || n <= 0)
                return "must be a positive whole number (at most " +
                       std::to_string(std::numeric_limits<int>::max()) + "), got \"" + value + "\"";
            return {};
        },
        "POSITIVE");
}

void add_state_options(CLI::App& cmd, std::string& state_db, std::string& state_url,
                       const std::string& db_help, const std::string& url_help) {
    cmd.add_option("--state-db", state_db, db_help)->envname("AGENCY_STATE_DB");
    cmd.add_option("--state-url", state_url, url_help)->envname("AGENCY_STATE_URL");
}

std::pair<std::string, int> parse_listen(const std::string& listen) {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) throw std::invalid_argument("--listen: expected HOST:PORT");
    std::string host = listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "127.0.0.1";
    int port = 0;
    try {
        port = std::stoi(listen.substr(colon + 1));
    } catch (const std::exception&) {
        throw std::invalid_argument("--listen: the port is not a number: " + listen);
    }
    if (port < 0 || port > 65535) throw std::invalid_argument("--listen: port out of range");
    return {host, port};
}

CommandLine::CommandLine()
    : log_level(env_or("AGENCY_LOG_LEVEL", "info")),
      app_(std::make_unique<CLI::App>(
          "agency-mcp: MCP tools over the agency gateway (rankings, audits, content...)")) {
    app_->require_subcommand(1);
    add_global_options();
    add_serve();
    add_http_limits();
    add_call_limits();
    add_oauth();
    add_sample_gateway();
    add_keys();
    add_answer_options();
    add_tool_selection();
    add_state();
    add_write_log();
    add_rate_limit();
    add_tuning();
    add_serve_footer();
    serve_cmd_->set_help_all_flag("--help-all",
                                  "Print every option, the HTTP limits, OAuth and tuning too");
    tools_doc_cmd_ = app_->add_subcommand(
        "tools-doc",
        "Print the Markdown tool reference generated from the tool definitions "
        "(build/agency-mcp tools-doc > docs/tools.md)");
    tools_doc_cmd_->add_flag("--readme", readme_section,
                             "Print only the README's generated section (toolsets, resources, "
                             "prompts)");
    tools_doc_cmd_->add_flag("--settings", settings_section,
                             "Print only docs/operations.md's generated table of serve's options "
                             "and variables");
}

CommandLine::~CommandLine() = default;

std::optional<Command> CommandLine::parse(int argc, char** argv) {
    if (auto refused = refuse_unknown_command(argc, argv)) {
        exit_code_ = *refused;
        return std::nullopt;
    }
    hide_groups_unless_help_all(argc, argv);
    try {
        app_->parse(argc, argv);
    } catch (const CLI::ValidationError& e) {
        // "--name: Value 0 not in range ...", and where the value came from when it was the
        // option's variable (the operator may have set it in a settings file long ago).
        std::string message = e.what();
        if (const std::string from = value_source(message, argc, argv); !from.empty())
            message += from;
        std::fprintf(stderr, "%s\nRun with --help for more information.\n", message.c_str());
        exit_code_ = e.get_exit_code();
        return std::nullopt;
    } catch (const CLI::ParseError& e) {
        exit_code_ = app_->exit(e);
        return std::nullopt;
    }
    auto& limits = serve.http_limits;
    limits.max_connections = static_cast<std::size_t>(max_connections_);
    limits.max_connections_per_peer = static_cast<std::size_t>(max_connections_per_address_);
    limits.head_timeout = std::chrono::seconds(head_timeout_s_);
    limits.idle_timeout = std::chrono::seconds(idle_timeout_s_);
    limits.max_streams = static_cast<std::size_t>(max_streams_);
    limits.max_streams_per_session = static_cast<std::size_t>(max_streams_per_session_);
    limits.max_sessions = static_cast<std::size_t>(max_sessions_);
    limits.max_sessions_per_principal = static_cast<std::size_t>(max_sessions_per_caller_);
    limits.max_streams_per_principal = static_cast<std::size_t>(max_streams_per_caller_);
    limits.workers = static_cast<std::size_t>(workers_);
    limits.read_workers = static_cast<std::size_t>(read_workers_);
    limits.worker_share = static_cast<std::size_t>(worker_share_);
    if (*sample_cmd_) return Command::sample_gateway;
    if (*keys_add_cmd_) return Command::keys_add;
    if (*keys_import_cmd_) return Command::keys_import;
    if (*keys_list_cmd_) return Command::keys_list;
    if (*keys_remove_cmd_) return Command::keys_remove;
    if (*keys_rotate_cmd_) return Command::keys_rotate;
    if (*keys_update_cmd_) return Command::keys_update;
    if (*tools_doc_cmd_) return Command::tools_doc;
    if (*state_migrate_cmd_) return Command::state_migrate;
    if (*state_export_cmd_) return Command::state_export;
    if (*state_import_cmd_) return Command::state_import;
    if (*state_backup_cmd_) return Command::state_backup;
    if (*write_log_prune_cmd_) return Command::write_log_prune;
    if (*write_log_cmd_) return Command::write_log;
    return Command::serve;
}

void CommandLine::add_serve() {
    serve_cmd_ = app_->add_subcommand("serve", "Run the MCP server (stdio by default)");
    serve_cmd_->add_flag("--http", serve.http, "Serve Streamable HTTP at /mcp instead of stdio");
    serve_cmd_
        ->add_option("--listen", serve.listen, "HOST:PORT for --http (default 127.0.0.1:8787)")
        ->envname("AGENCY_HTTP_LISTEN");
    serve_cmd_
        ->add_option("--metrics-listen", serve.metrics_listen,
                     "HOST:PORT of a listener serving only GET /metrics (Prometheus text), also "
                     "in stdio mode; --http serves /metrics beside /mcp as well")
        ->envname("AGENCY_METRICS_LISTEN");
    serve_cmd_->add_flag("--read-only", serve.read_only, "Hide and refuse every action tool")
        ->envname("AGENCY_READ_ONLY");
    serve_cmd_
        ->add_flag("--require-gateway", serve.require_gateway,
                   "Exit when the gateway cannot be reached at start (by default the server "
                   "starts, its tools say why, and it keeps trying in the background)")
        ->envname("AGENCY_REQUIRE_GATEWAY");
    serve_cmd_
        ->add_option("--gateway-url", serve.gateway_url,
                     "Gateway base URL (none: the built-in sample gateway)")
        ->envname("AGENCY_GATEWAY_URL")
        ->transform(CLI::Validator(
            [](std::string& url) {
                if (unfilled_placeholder(url)) url.clear();  // a bundle's empty setting
                return std::string();
            },
            ""));
    serve_cmd_->add_option("--api-key-file", serve.api_key_file,
                           "File holding the gateway API key (default: $AGENCY_API_KEY)");
    serve_cmd_
        ->add_option("--keys-file", serve.keys_file,
                     "HTTP callers' keys file (agency-mcp keys add; default: the one keys add "
                     "writes, ~/.config/agency-mcp/keys.json, if it exists); with keys, every HTTP "
                     "request needs one")
        ->envname("AGENCY_KEYS_FILE");
    serve_cmd_->add_option("--max-body-bytes", serve.max_body,
                           "Largest accepted HTTP body or stdio line");
    serve_cmd_->add_option("--allowed-host", serve.allowed_hosts,
                           "Extra Host header names accepted over HTTP (DNS-rebinding protection)");
    serve_cmd_->add_option("--allowed-origin", serve.allowed_origins,
                           "Extra Origins accepted over HTTP");
    add_state_options(
        *serve_cmd_, serve.state_db, serve.state_url,
        "SQLite file for jobs, drafts and idempotency records (default: "
        "$XDG_STATE_HOME/agency-mcp/state.db or ~/.local/state/agency-mcp/state.db)",
        "PostgreSQL URL (postgresql://user@host/db?sslmode=require) of the state several "
        "instances share, instead of --state-db; needs AGENCY_SERVER_SECRET, the same on every "
        "instance (docs/deploy.md)");
    serve_cmd_
        ->add_option("--discovery-refresh", serve.discovery_refresh_s,
                     "Seconds between reads of the gateway's discovery (0: never); when its "
                     "actions change, tools follow and clients are told (default 60)")
        ->envname("AGENCY_DISCOVERY_REFRESH_S")
        ->check(CLI::Range(0, 86400));
    serve_cmd_
        ->add_option("--drain-timeout", serve.drain_timeout_s,
                     "Seconds a stop (SIGTERM, or end of input over stdio) waits for the calls "
                     "in flight before cancelling them; new calls are refused meanwhile "
                     "(default 30)")
        ->envname("AGENCY_DRAIN_TIMEOUT_S")
        ->check(CLI::Range(0, 3600));
    serve_cmd_
        ->add_option("--confirm", serve.confirm,
                     "How a deploy or send is confirmed: any (an elicitation answer, or the "
                     "confirmation_id of a preview, default) or elicitation-only (only a "
                     "person's answer to the form; a confirmation_id, which the model relays, "
                     "is refused)")
        ->envname("AGENCY_CONFIRM")
        ->check(CLI::IsMember({"any", "elicitation-only"}));
    serve_cmd_
        ->add_flag("--no-ui", serve.no_ui,
                   "Link no MCP Apps view (rankings, audit, approval, client overview), even for "
                   "clients that declare the io.modelcontextprotocol/ui extension: every client "
                   "then gets the text answers and the confirmation of clients without views")
        ->envname("AGENCY_NO_UI");
    serve_cmd_
        ->add_option("--max-actions-in-flight-per-client", serve.credits.max_in_flight_per_client,
                     "Generation actions running at once for one client; more are refused "
                     "with reason rate_limited (default 2)")
        ->envname("AGENCY_MAX_ACTIONS_IN_FLIGHT")
        ->check(positive_count());
    serve_cmd_
        ->add_option("--max-actions-per-minute-per-client", serve.credits.max_per_minute_per_client,
                     "Generation actions started per client per minute; more are refused with "
                     "reason rate_limited (default 20)")
        ->envname("AGENCY_MAX_ACTIONS_PER_MINUTE")
        ->check(positive_count());
    serve_cmd_
        ->add_option("--monthly-actions", serve.monthly_actions,
                     "Generation actions (those that spend credits) each caller may run per "
                     "budget window, unless its key sets its own; more are refused with reason "
                     "budget. 0: none (read-only in effect). Default: no budget")
        ->envname("AGENCY_MONTHLY_ACTIONS")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1'000'000'000}));
    serve_cmd_
        ->add_option("--budget-window", serve.budget_window,
                     "The action budget's window, in UTC: month (default), week (from Monday) "
                     "or day")
        ->envname("AGENCY_BUDGET_WINDOW")
        ->check(CLI::IsMember({"month", "week", "day"}));
}

// How long and in what form answers come back.
void CommandLine::add_answer_options() {
    serve_cmd_
        ->add_option("--call-timeout", serve.call_timeout_s,
                     "Seconds one gateway operation may take in all, retries and their waits "
                     "included; keep it under your MCP client's request timeout (default 30)")
        ->envname("AGENCY_CALL_TIMEOUT")
        ->check(CLI::Range(1.0, 3600.0));
    serve_cmd_
        ->add_option("--gateway-max-response-bytes", serve.gateway_max_response_bytes,
                     "Bytes one gateway answer may be, headers and body, chunked or not; a "
                     "larger one ends the call with an error and is not read further (default "
                     "16777216, 16 MiB; from 65536)")
        ->envname("AGENCY_GATEWAY_MAX_RESPONSE_BYTES")
        ->check(CLI::Range(std::uint64_t{65536}, std::uint64_t{1} << 40));
    serve_cmd_
        ->add_option("--structured-text", serve.structured_text,
                     "The text block beside a tool's structuredContent, which is what most "
                     "agent frameworks hand their model: auto (compact for 2026-07-28 clients, "
                     "the whole JSON for older ones), full (the JSON), compact (every member as "
                     "lines and tables, ~60% of the JSON) or summary (one line of counts: only "
                     "for hosts known to show their model structuredContent; others then see "
                     "no rows). Default auto")
        ->envname("AGENCY_STRUCTURED_TEXT")
        ->check(CLI::IsMember({"auto", "full", "compact", "summary"}));
    serve_cmd_
        ->add_option("--structured-content", serve.structured_content,
                     "What a tool's structuredContent holds: auto (lean for the hosts known to "
                     "show their model structuredContent alone: Claude Code, Copilot CLI, "
                     "opencode, Codex, by clientInfo.name; full for others), lean (rows as "
                     "columns and arrays, no nulls: ~60% of the bytes) or full. Default auto")
        ->envname("AGENCY_STRUCTURED_CONTENT")
        ->check(CLI::IsMember({"auto", "full", "lean"}));
}

// Which tools the server offers (docs/tools.md, "Toolsets"); names are checked at start.
void CommandLine::add_tool_selection() {
    std::string names;
    for (const auto& set : tools::toolsets()) names += std::string(set.name) + ", ";
    serve_cmd_
        ->add_option("--toolsets", serve.selection.groups,
                     "Comma-separated toolsets to enable: " + names +
                         "or all / default (default: default, every toolset); clients comes "
                         "with any toolset (docs/tools.md lists their tools)")
        ->envname("AGENCY_TOOLSETS")
        ->delimiter(',');
    serve_cmd_
        ->add_option("--tools", serve.selection.tools,
                     "Comma-separated tools to enable besides the toolsets; alone (without "
                     "--toolsets), only these tools")
        ->envname("AGENCY_TOOLS")
        ->delimiter(',');
    serve_cmd_
        ->add_option("--exclude-tools", serve.selection.exclude,
                     "Comma-separated tools to disable; wins over --toolsets and --tools")
        ->envname("AGENCY_EXCLUDE_TOOLS")
        ->delimiter(',');
}

void CommandLine::add_sample_gateway() {
    sample_cmd_ =
        app_->add_subcommand("sample-gateway", "Serve the built-in sample gateway (API explorer)");
    sample_cmd_->add_option("--listen", sample.listen, "HOST:PORT (default 127.0.0.1:8788)");
    sample_cmd_->add_option("--bulk-keyword-rows", sample.gateway.bulk_keyword_rows,
                            "Add client demo-bulk with this many keyword rows (benchmarks)");
    sample_cmd_->add_option(
        "--fault", sample.faults,
        "Inject faults for the whole run (repeatable): TARGET:MODE[:PERCENT[:N]]"
        " with TARGET an action, a resource or '*', MODE one of fail_before, "
        "fail_after, status_error, rate_limit, slow, drop, reset, PERCENT the "
        "chance per request (default 100), N the delay in ms (slow), "
        "Retry-After s (rate_limit) or status_code (status_error). Counters: "
        "GET /_control/stats. "
        "Hostile answers: huge (a JSON answer of N bytes, default 1 GiB), endless (a chunked "
        "answer that never ends), dripping (the answer, head and body, a byte every N ms, "
        "default 100), redirect (302 to 127.0.0.1:N, without N to a host that does not "
        "resolve), random_status (a status from 100 to 999). "
        "Hostile modes: deep and wide (a read's one row nested N deep, "
        "or with N members; default 1000000), many_resources (TARGET '': discovery lists N "
        "more resources)");
    sample_cmd_->add_flag("--bare-records", sample.gateway.bare_records,
                          "Rows only as the spec describes them (no deployed_at or sent_at; "
                          "index_url records nothing)");
    sample_cmd_->add_flag("--counts-only-reports", sample.gateway.counts_only_reports,
                          "Audit reports with issue counts and no issue list (a gateway that "
                          "returns counts without detail)");
    sample_cmd_->add_option("--outreach-body-field", sample.gateway.outreach_body_field,
                            "Where outreach drafts keep their body: html (default), another "
                            "name such as body_html, a nested member such as email.body, or "
                            "'' for drafts without a body");
    sample_cmd_->add_flag("--outreach-record-only", sample.gateway.outreach_record_only,
                          "generate_outreach_email answers id, prospect_url, subject and "
                          "status only; the body and recipient stay in the backlink_outreach "
                          "row");
    sample_cmd_
        ->add_option("--agency-clients", sample.gateway.agency_clients,
                     "This many more clients, agency-01 to agency-NN, each tracked "
                     "weekly (50 keywords x 50 dates) with rankings, audits, articles, "
                     "backlinks, citations and reviews")
        ->check(CLI::Range(0, 1000));
    sample_cmd_->add_flag("--keyword-url-switches", sample.gateway.keyword_url_switches,
                          "Every third keyword also ranks with a second page, on some dates "
                          "instead of its own and on some beside it");
    sample_cmd_->add_flag("--other-member-names", sample.gateway.other_member_names,
                          "backlinks carry authority_score and lost (true/false), citations "
                          "accuracy_status, as another deployment names them");
    sample_cmd_->add_flag("--spec-shaped-answers", sample.gateway.spec_shaped_answers,
                          "Action answers only as the spec shows them (generate_blog: id, "
                          "post_title; deploy_blog: id)");
    sample_cmd_->add_flag("--slow-deploys", sample.gateway.slow_deploys,
                          "Articles deployed (or auto-deployed) stay \"deploying\"");
    sample_cmd_->add_flag("--stale-reports", sample.gateway.stale_reports,
                          "seo_audit answers with reports it already has, dated long before "
                          "(a gateway that serves cached crawls)");
    sample_cmd_->add_flag("--phishing-article", sample.gateway.phishing_article,
                          "demo-law's second blog post holds a form with a password field, a "
                          "link to another address than its text, an iframe and a 1x1 remote "
                          "image (what an approval must name)");
}

// state migrate | export | import: moving and upgrading the state store (docs/deploy.md).
void CommandLine::add_state() {
    state_cmd_ =
        app_->add_subcommand("state", "Upgrade, back up, export or import the state store");
    state_cmd_->require_subcommand(1);
    state_migrate_cmd_ = state_cmd_->add_subcommand(
        "migrate", "Bring the store's schema up to this version (serve also does it at start)");
    state_export_cmd_ = state_cmd_->add_subcommand(
        "export", "Write every row of the store as JSON lines (stdout, or --out FILE)");
    state_export_cmd_->add_option("--out", state.file, "File to write instead of stdout");
    state_import_cmd_ = state_cmd_->add_subcommand(
        "import", "Read rows written by state export into the store (stdin, or --in FILE)");
    state_import_cmd_->add_option("--in", state.file, "File to read instead of stdin");
    state_backup_cmd_ = state_cmd_->add_subcommand(
        "backup",
        "Copy the SQLite state file, consistent while a server writes it, to a new "
        "FILE (mode 0600); PostgreSQL: pg_dump");
    state_backup_cmd_->add_option("FILE", state.file, "The new file (never overwritten)")
        ->required();
    for (auto* cmd :
         {state_migrate_cmd_, state_export_cmd_, state_import_cmd_, state_backup_cmd_}) {
        add_state_options(*cmd, state.state_db, state.state_url);
    }
}

// write-log [prune]: the record of every action call (docs/operations.md).
void CommandLine::add_write_log() {
    write_log_cmd_ = app_->add_subcommand(
        "write-log", "Print the write log: every action call, done or refused (JSON lines or CSV)");
    write_log_cmd_->add_option("--since", write_log.since,
                               "Rows from this date or time (2026-11-01, 2026-11-01T09:00:00Z) "
                               "or age (7d, 12h, 30m) on");
    write_log_cmd_->add_option("--client", write_log.client_id, "Only this client_id's rows");
    write_log_cmd_->add_option("--tool", write_log.tool, "Only this tool's rows");
    write_log_cmd_->add_option("--caller", write_log.caller,
                               "Only this caller's rows: a key's name, or the principal as the "
                               "log writes it (key:NAME, \"oauth:ISSUER SUBJECT\", local)");
    write_log_cmd_->add_option("--format", write_log.format, "jsonl (default) or csv")
        ->check(CLI::IsMember({"jsonl", "csv"}));
    write_log_cmd_->add_option("--limit", write_log.limit, "At most this many rows (0: all)");
    write_log_prune_cmd_ = write_log_cmd_->add_subcommand(
        "prune", "Delete the rows older than --before (itself recorded in the log)");
    write_log_prune_cmd_
        ->add_option("--before", write_log.before,
                     "Rows before this date or time (2026-01-01) are deleted")
        ->required();
    for (auto* cmd : {write_log_cmd_, write_log_prune_cmd_}) {
        add_state_options(*cmd, write_log.state_db, write_log.state_url);
    }
}

// serve --rate-limit: units (tool calls, gateway reads) per caller (server/rate_limit.hpp).
void CommandLine::add_rate_limit() {
    serve_cmd_
        ->add_option("--rate-limit", serve.rate_limit,
                     "Units per caller: N or N/minute, N/second, or off. A tool call costs a "
                     "unit; a resources/read, prompts/get or completion/complete one per "
                     "gateway read it may make (at least one; a client overview 7). Over it a "
                     "request is refused saying its cost and when to retry (HTTP 429), before "
                     "it reaches the gateway. Default: 600/minute with "
                     "--http; off over stdio, whose one caller is the user who started it "
                     "(an agent's bulk loop; the per-client credit limits still bound actions)")
        ->envname("AGENCY_RATE_LIMIT")
        ->check(CLI::Validator(
            [](std::string& value) -> std::string {
                try {
                    mcp::parse_rate_limit(value, 0);
                    return {};
                } catch (const std::invalid_argument& e) {
                    return std::string(e.what()) + " (from the option or $AGENCY_RATE_LIMIT)";
                }
            },
            "RATE"));
    serve_cmd_
        ->add_option("--rate-limit-burst", serve.rate_limit_burst,
                     "Units a caller may spend at once before the rate applies (default "
                     "120; 0: one minute's worth)")
        ->envname("AGENCY_RATE_LIMIT_BURST")
        ->check(CLI::Range(0, 1'000'000));
}

// Options of the whole program, accepted before or after the subcommand (fallthrough: a
// subcommand hands an option it does not know to its parent; subcommands made later inherit it).
void CommandLine::add_global_options() {
    app_->fallthrough();
    app_->set_version_flag("-V,--version", std::string("agency-mcp ") + AGENCY_VERSION,
                           "Print the version and exit");
    app_->add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
        ->envname("AGENCY_LOG_LEVEL")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    app_->add_option("--log-file", log_file,
                     "Append logs to this file instead of stderr (stdout stays protocol-only)")
        ->envname("AGENCY_LOG_FILE");
    app_->add_option("--log-format", log_format,
                     "text (default) or json: one JSON object a line for log collectors; lines "
                     "of a call carry its trace_id, tool and principal")
        ->envname("AGENCY_LOG_FORMAT")
        ->check(CLI::IsMember({"text", "json"}));
}

// The environment `serve --help` names besides the options' own variables.
void CommandLine::add_serve_footer() {
    serve_cmd_->footer(
        "Environment:\n"
        "  AGENCY_GATEWAY_URL   the gateway's base URL (none: the built-in sample gateway)\n"
        "  AGENCY_API_KEY       the gateway's API key (never logged)\n"
        "  SSL_CERT_FILE        a PEM file of CA certificates to trust for an https gateway,\n"
        "                       e.g. your private CA (default: the system's CA store)\n"
        "  SSL_CERT_DIR         a directory of CA certificates (hashed, as c_rehash makes)\n"
        "Global options (--log-level, --log-file, --log-format) go before or after the "
        "subcommand.\n"
        "Client setup (Claude Desktop, Claude Code, VS Code, Cursor, Inspector): "
        "docs/clients.md\n");
}

}  // namespace agency::app
