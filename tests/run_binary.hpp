// Runs a shell command line to its end with `input` on stdin, capturing stdout and stderr
// (through files in `dir`, so a large stderr never blocks the child): the tests that drive
// the real agency-mcp binary from its command line.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace agency::testing {

struct Outcome {
    int exit_code = -1;
    std::string out, err;
};

inline Outcome run_command(const std::filesystem::path& dir, const std::string& command_line,
                           const std::string& input = "") {
    const std::filesystem::path in = dir / "in.txt", err = dir / "err.txt";
    std::ofstream(in) << input;
    const std::string command =
        command_line + " < '" + in.string() + "' 2> '" + err.string() + "'";
    Outcome r;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return r;
    char buffer[4096];
    while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) r.out.append(buffer, n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream e(err);
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    return r;
}

}  // namespace agency::testing
