// The checks the command line's files share (CLI11 validators).
#pragma once

#include <CLI/CLI.hpp>

namespace agency::app {

// A positive whole number for a count option; anything else is refused with one clear message
// before the server starts (CommandLine::parse adds which variable it came from, if one did).
CLI::Validator positive_count();

}  // namespace agency::app
