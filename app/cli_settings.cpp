// The options of `serve` an operator tunes rarely (the tuning group), which options `serve --help`
// shows, and docs/operations.md's generated table of every option (tools-doc --settings): the
// table is made from the same definitions the parser uses, so it cannot drift from them.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "app/cli.hpp"

namespace agency::app {

namespace {

// A table cell: one line, with Markdown's column bar escaped.
std::string cell(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '|')
            out += "\\|";
        else
            out += c == '\n' ? ' ' : c;
    }
    return out;
}

// The option's group, "serve" for the first-run ones (CLI11's default group).
std::string group_of(const CLI::Option& option) {
    const std::string& group = option.get_group();
    return group.empty() || group == "Options" || group == "OPTIONS" ? "serve" : group;
}

}  // namespace

void CommandLine::add_tuning() {
    add_bound(*serve_cmd_, kTuning, "--gateway-read-timeout", serve.gateway_read_timeout_s,
              "AGENCY_GATEWAY_READ_TIMEOUT_S",
              "Seconds one attempt of a gateway read may wait for its answer before it "
              "is retried (default 10; --call-timeout bounds the whole)",
              CLI::Range(1, 3600));
    add_bound(*serve_cmd_, kTuning, "--gateway-action-timeout", serve.gateway_action_timeout_s,
              "AGENCY_GATEWAY_ACTION_TIMEOUT_S",
              "Seconds one attempt of a gateway action (generate, audit, deploy, send) "
              "may wait for its answer (default 20; the spec suggests 10-30)",
              CLI::Range(1, 3600));
    add_bound(*serve_cmd_, kTuning, "--state-lease-ms", serve.state_lease_ms,
              "AGENCY_STATE_LEASE_MS",
              "With --state-url: milliseconds an instance's claim on a job or task lasts "
              "unless renewed; another instance takes over an orphan after it "
              "(default 15000)",
              CLI::Range(300, 600'000));
}

void CommandLine::hide_groups_unless_help_all(int argc, char** argv) {
    const bool all = std::any_of(
        argv, argv + argc, [](const char* arg) { return std::string_view(arg) == "--help-all"; });
    if (all) return;
    // The groups are left out of the help only: an option in CLI11's hidden group ("") would
    // lose its name everywhere, the message refusing its value too.
    struct FirstRunHelp final : CLI::Formatter {
        std::string make_group(std::string group, bool positional,
                               std::vector<const CLI::Option*> options) const override {
            if (group == kHttpLimits || group == kOAuth || group == kTuning) return {};
            return CLI::Formatter::make_group(std::move(group), positional, std::move(options));
        }
    };
    serve_cmd_->formatter(std::make_shared<FirstRunHelp>());
    std::size_t counts[3] = {0, 0, 0};
    for (const CLI::Option* option : serve_cmd_->get_options()) {
        const std::string& group = option->get_group();
        if (group == kHttpLimits) ++counts[0];
        if (group == kOAuth) ++counts[1];
        if (group == kTuning) ++counts[2];
    }
    serve_cmd_->footer(
        std::string(serve_cmd_->get_footer()) + "Not shown here: the HTTP limits (" +
        std::to_string(counts[0]) + " options), OAuth (" + std::to_string(counts[1]) +
        ") and tuning (" + std::to_string(counts[2]) +
        "): agency-mcp serve --help-all, or docs/operations.md, \"Every option\".\n");
}

std::string CommandLine::value_source(std::string_view message, int argc, char** argv) const {
    const auto colon = message.find(':');
    if (!message.starts_with("--") || colon == std::string_view::npos) return {};
    const std::string name(message.substr(2, colon - 2));
    for (const CLI::App* command :
         {static_cast<const CLI::App*>(app_.get()), static_cast<const CLI::App*>(serve_cmd_)}) {
        for (const CLI::Option* option : command->get_options()) {
            const auto& names = option->get_lnames();
            if (std::find(names.begin(), names.end(), name) == names.end()) continue;
            const std::string env = option->get_envname();
            const std::string flag = "--" + name;
            const bool given = std::any_of(argv, argv + argc, [&](const char* arg) {
                const std::string_view a(arg);
                return a == flag || a.starts_with(flag + "=");
            });
            if (env.empty() || given || std::getenv(env.c_str()) == nullptr) return {};
            return " (from $" + env + "; unset it or give " +
                   std::string(message.substr(0, colon)) + " on the command line)";
        }
    }
    return {};
}

std::string CommandLine::settings_table() const {
    std::string out =
        "| option | variable | group | value | what it does |\n|---|---|---|---|---|\n";
    const auto row = [&](const CLI::Option& option, std::string_view group) {
        const auto& long_names = option.get_lnames();
        if (long_names.empty() || long_names[0] == "help" || long_names[0] == "help-all") return;
        std::string names;
        for (const std::string& name : long_names)
            names += (names.empty() ? "`--" : ", `--") + name + "`";
        const std::string env = option.get_envname();
        out += "| " + names + " | " + (env.empty() ? "" : "`" + env + "`") + " | " +
               std::string(group) + " | " + cell(option.get_type_name()) + " | " +
               cell(option.get_description()) + " |\n";
    };
    for (const CLI::Option* option : app_->get_options()) row(*option, "global");
    for (const CLI::Option* option : serve_cmd_->get_options()) row(*option, group_of(*option));
    out +=
        "| (none) | `AGENCY_API_KEY` | secret | TEXT | The gateway's API key, never on the command "
        "line (or `--api-key-file`) |\n"
        "| (none) | `AGENCY_SERVER_SECRET` | secret | TEXT | Seals cursors and requestState; the "
        "same on every instance of a shared store (unset: a random one per start) |\n"
        "| (none) | `AGENCY_OAUTH_INTROSPECTION_SECRET` | secret | TEXT | The secret of "
        "`--oauth-introspection-client-id` |\n";
    return out;
}

}  // namespace agency::app
