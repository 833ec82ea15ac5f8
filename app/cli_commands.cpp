// The command line's answer to a command it does not know: the valid names, and the nearest
// one when the word is a likely typo.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli.hpp"

namespace agency::app {

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

// The first word that is neither an option nor a global option's value, from `from` on.
int next_word(int argc, char** argv, int from) {
    for (int i = from; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--log-level" || arg == "--log-file" || arg == "--log-format") {
            ++i;  // its value
            continue;
        }
        if (!arg.empty() && arg[0] == '-') continue;
        return i;
    }
    return argc;
}

bool has_subcommand(const CLI::App& parent, const std::string& name) {
    for (const auto* sub : parent.get_subcommands({}))
        if (sub->get_name() == name) return true;
    return false;
}

// "unknown command" with the valid names, and the nearest one when it is a likely typo.
int unknown_command(const std::string& program, const std::string& word, const CLI::App& parent) {
    std::string names, nearest;
    std::size_t best = 3;  // a suggestion only within two edits
    for (const auto* sub : parent.get_subcommands({})) {
        const std::string& name = sub->get_name();
        names += "  " + name + std::string(name.size() < 16 ? 16 - name.size() : 1, ' ') +
                 sub->get_description() + "\n";
        const std::size_t d = edit_distance(word, name);
        if (d < best || (name.rfind(word, 0) == 0 && word.size() >= 2 && best > 1)) {
            best = name.rfind(word, 0) == 0 ? 1 : d;
            nearest = name;
        }
    }
    std::string text = program + ": unknown command '" + word + "'.";
    if (!nearest.empty()) text += " Did you mean '" + nearest + "'?";
    std::fprintf(stderr, "%s\nValid commands:\n%sRun '%s --help' for details.\n", text.c_str(),
                 names.c_str(), program.c_str());
    return 2;
}

}  // namespace

std::optional<int> CommandLine::refuse_unknown_command(int argc, char** argv) const {
    const int first = next_word(argc, argv, 1);
    if (first >= argc) return std::nullopt;
    const std::string word = argv[first];
    for (const auto& [name, parent] : {std::pair{"keys", keys_cmd_}, {"state", state_cmd_}}) {
        if (word != name) continue;
        const int second = next_word(argc, argv, first + 1);
        if (second < argc && !has_subcommand(*parent, argv[second]))
            return unknown_command(std::string("agency-mcp ") + name, argv[second], *parent);
        return std::nullopt;
    }
    if (has_subcommand(*app_, word)) return std::nullopt;
    return unknown_command("agency-mcp", word, *app_);
}

}  // namespace agency::app
