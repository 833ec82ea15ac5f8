// Reading the Prometheus text exposition in tests: one sample's value by labels, and what
// promtool says of a whole exposition.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace agency::testing {

// The sum of the samples of `name` whose labels include every pair of `labels` (0 when none).
inline double metric_value(const std::string& text, const std::string& name,
                           const std::map<std::string, std::string>& labels) {
    double sum = 0;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::string_view line(text.data() + at, end - at);
        at = end + 1;
        if (line.substr(0, name.size()) != name) continue;
        const std::string_view rest = line.substr(name.size());
        if (rest.empty() || (rest[0] != '{' && rest[0] != ' ')) continue;
        std::map<std::string, std::string> found;
        std::size_t i = 0;
        if (rest[0] == '{') {
            i = 1;
            while (i < rest.size() && rest[i] != '}') {
                const std::size_t eq = rest.find('=', i);
                const std::string key(rest.substr(i, eq - i));
                std::string value;
                std::size_t j = eq + 2;  // past ="
                for (; j < rest.size() && rest[j] != '"'; ++j) {
                    if (rest[j] == '\\' && j + 1 < rest.size()) ++j;
                    value += rest[j];
                }
                found[key] = value;
                i = j + 1;
                if (i < rest.size() && rest[i] == ',') ++i;
            }
            ++i;
        }
        bool match = true;
        for (const auto& [key, value] : labels) {
            auto it = found.find(key);
            // An empty label value is written out by prometheus-cpp, or left out by others.
            match = match && (it != found.end() ? it->second == value : value.empty());
        }
        if (match) sum += std::stod(std::string(rest.substr(i)));
    }
    return sum;
}

// promtool check metrics < file: its exit code and what it printed (lint problems).
inline std::pair<int, std::string> promtool_check(const std::filesystem::path& file) {
    const std::string command = "promtool check metrics < '" + file.string() + "' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return {-1, "could not run promtool"};
    std::string out;
    char buffer[4096];
    while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    const int status = pclose(pipe);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 127)
        out += "\npromtool is missing: scripts/install-deps.sh installs Debian's prometheus";
    return {code, out};
}

}  // namespace agency::testing
