// The checks and options the command line's files share (CLI11 validators and option makers).
#pragma once

#include <CLI/CLI.hpp>

namespace agency::app {

// A positive whole number for a count option; anything else is refused with one clear message
// before the server starts (CommandLine::parse adds which variable it came from, if one did).
CLI::Validator positive_count();

// --state-db and --state-url on a command that opens the state, with their variables
// (AGENCY_STATE_DB, AGENCY_STATE_URL); the help says what this command does with each.
void add_state_options(CLI::App& cmd, std::string& state_db, std::string& state_url,
                       const std::string& db_help =
                           "SQLite state file (default: the one serve "
                           "uses)",
                       const std::string& url_help =
                           "PostgreSQL URL of a shared store (wins "
                           "over --state-db)");

// An option of a group of bounds (`serve --help-all` shows the group apart): its variable
// `env`, and by default a count from 1.
template <typename T>
CLI::Option* add_bound(CLI::App& cmd, const std::string& group, const std::string& name, T& value,
                       const std::string& env, const std::string& help,
                       const CLI::Validator& check = positive_count()) {
    return cmd.add_option(name, value, help)->envname(env)->group(group)->check(check);
}

}  // namespace agency::app
