// Log lines, through one door: every layer writes here, and only base/log.cpp (and the app's
// set-up of the sinks and formats) sees spdlog. A call site pays for fmt's compile-time format
// check and the type-erased arguments, not for spdlog's and fmt's implementations, which are
// compiled once in base/log.cpp (header-only spdlog compiled into every file that logged cost
// ~8 s of compile per file; docs/benchmarks.md, bench/findings.md entry 15).
//
// The arguments are formatted only when the level is enabled. Lines go to the process's default
// logger (app/process.cpp sets its sink and format; tests may swap it), so a line written while
// a thread works for a call carries the call's trace id (app/log_format.cpp).
#pragma once

#include <string>
#include <string_view>

#include <fmt/core.h>

namespace agency::log {

enum class Level { trace, debug, info, warn, error, critical, off };

// One line at `level`, formatted from `format` and `args` when that level is enabled.
void vwrite(Level level, fmt::string_view format, fmt::format_args args);
// One line of text as it is (no format braces read).
void write(Level level, std::string_view text);
// The process's threshold: lines below it are dropped (the app sets it from --log-level).
void set_level(Level level);
// The threshold now (to put it back after a quiet stretch).
Level current_level();
// Flushes and closes every sink (before std::_Exit, which runs no destructor).
void shutdown();
// fmt::vformat, compiled in one place (base/log.cpp).
std::string vformat(fmt::string_view format, fmt::format_args args);

template <typename... Args>
std::string format(fmt::format_string<Args...> format, Args&&... args) {
    return log::vformat(format, fmt::make_format_args(args...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
    log::vwrite(Level::debug, format, fmt::make_format_args(args...));
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
    log::vwrite(Level::info, format, fmt::make_format_args(args...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
    log::vwrite(Level::warn, format, fmt::make_format_args(args...));
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
    log::vwrite(Level::error, format, fmt::make_format_args(args...));
}
template <typename... Args>
void critical(fmt::format_string<Args...> format, Args&&... args) {
    log::vwrite(Level::critical, format, fmt::make_format_args(args...));
}

}  // namespace agency::log
