// The `keys` commands' options: add, update, list, remove and rotate (app/key_commands.cpp runs
// them). A running `serve --http` that reads the file itself sees each change at its next
// request; one reading a copy (a systemd credential) at its restart.
#include "app/cli.hpp"
#include "app/cli_validators.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace agency::app {

namespace {

// --monthly-actions: a whole number, 0 or more (CLI11 parses the number; this says the bound).
std::string non_negative_actions(const std::string& value) {
    return !value.empty() && value.front() == '-'
               ? "--monthly-actions must be 0 or more (0: no generation action), not " + value
               : std::string();
}

}  // namespace

void CommandLine::add_keys() {
    keys_cmd_ = app_->add_subcommand("keys", "Manage API keys for HTTP callers");
    keys_cmd_->require_subcommand(1);
    keys_add_cmd_ = keys_cmd_->add_subcommand("add", "Create a key and print it once");
    keys_add_cmd_->add_option("--name", keys.name, "Who the key is for")->required();
    keys_add_cmd_->add_option("--scopes", keys.scopes, "read and/or write")->delimiter(',');
    keys_add_cmd_
        ->add_option("--clients", keys.clients,
                     "The only clients the key may reach, by id, comma-separated (default: "
                     "every client); any other client does not exist for it")
        ->delimiter(',');
    keys_add_cmd_
        ->add_option_function<std::int64_t>(
            "--monthly-actions", [this](const std::int64_t& n) { keys.monthly_actions = n; },
            "Generation actions the key may run per budget window (0: none; default: the "
            "server's --monthly-actions)")
        ->check(non_negative_actions, "INT >= 0");
    keys_import_cmd_ = keys_cmd_->add_subcommand(
        "import",
        "Create many keys at once from a CSV file (header: name,scopes,clients,monthly_actions) "
        "or JSON; prints name,key for each, once; all or none");
    keys_import_cmd_->add_option("FILE", keys.import_from, "The CSV or JSON file ('-': stdin)")
        ->required();
    keys_import_cmd_->add_option("--out", keys.out,
                                 "Write name,key lines to this new file (mode 0600) instead of "
                                 "stdout");
    add_key_commands(*keys_cmd_);
    for (auto* cmd : {keys_add_cmd_, keys_import_cmd_, keys_list_cmd_, keys_remove_cmd_,
                      keys_rotate_cmd_, keys_update_cmd_})
        cmd->add_option("--keys-file", keys.keys_file,
                        "Keys file (default: $XDG_CONFIG_HOME/agency-mcp/keys.json or "
                        "~/.config/agency-mcp/keys.json)")
            ->envname("AGENCY_KEYS_FILE");
}

// keys list, remove and rotate.
void CommandLine::add_key_commands(CLI::App& keys_cmd) {
    keys_list_cmd_ = keys_cmd.add_subcommand(
        "list",
        "List the keys: name, scopes, when created and rotated, clients, action budget and "
        "its use this window (never a key or hash)");
    add_state_options(*keys_list_cmd_, keys.state_db, keys.state_url,
                      "The server's SQLite state, where the budget use is counted (default: "
                      "serve's); not created when absent",
                      "The shared PostgreSQL state instead of --state-db");
    keys_list_cmd_
        ->add_option("--budget-window", keys.budget_window,
                     "The server's --budget-window: month (default), week or day")
        ->envname("AGENCY_BUDGET_WINDOW")
        ->check(CLI::IsMember({"month", "week", "day"}));
    keys_remove_cmd_ = keys_cmd.add_subcommand(
        "remove",
        "Remove a key; a server reading the file refuses it from its next request on "
        "(one reading a systemd credential's copy, after a restart)");
    keys_rotate_cmd_ = keys_cmd.add_subcommand(
        "rotate",
        "Replace a key by a new one (same name and scopes), printed once; a server reading the "
        "file takes the new key and refuses the old from its next request on");
    keys_update_cmd_ = keys_cmd.add_subcommand(
        "update",
        "Change a key's clients or action budget; the key stays the same and a running server "
        "applies it from its next request");
    for (auto* cmd : {keys_remove_cmd_, keys_rotate_cmd_, keys_update_cmd_})
        cmd->add_option("--name", keys.name, "The key's name (see keys list)")->required();
    auto* clients = keys_update_cmd_
                        ->add_option("--clients", keys.clients,
                                     "The only clients the key may reach, comma-separated "
                                     "(replaces the key's list)")
                        ->delimiter(',');
    keys_update_cmd_
        ->add_flag("--all-clients", keys.all_clients, "Let the key reach every client again")
        ->excludes(clients);
    auto* budget =
        keys_update_cmd_
            ->add_option_function<std::int64_t>(
                "--monthly-actions", [this](const std::int64_t& n) { keys.monthly_actions = n; },
                "Generation actions per budget window (0: none)")
            ->check(non_negative_actions, "INT >= 0");
    keys_update_cmd_
        ->add_flag("--no-monthly-actions", keys.no_monthly_actions,
                   "Drop the key's own budget: the server's default applies")
        ->excludes(budget);
}

}  // namespace agency::app
