#include "base/log.hpp"

#include <spdlog/spdlog.h>

namespace agency::log {

namespace {

spdlog::level::level_enum to_spdlog(Level level) {
    switch (level) {
        case Level::trace: return spdlog::level::trace;
        case Level::debug: return spdlog::level::debug;
        case Level::info: return spdlog::level::info;
        case Level::warn: return spdlog::level::warn;
        case Level::error: return spdlog::level::err;
        case Level::critical: return spdlog::level::critical;
        case Level::off: return spdlog::level::off;
    }
    return spdlog::level::info;
}

}  // namespace

void vwrite(Level level, fmt::string_view format, fmt::format_args args) {
    auto* logger = spdlog::default_logger_raw();
    const auto spd_level = to_spdlog(level);
    if (!logger || !logger->should_log(spd_level)) return;  // none after shutdown()
    const std::string text = fmt::vformat(format, args);
    logger->log(spd_level, spdlog::string_view_t(text.data(), text.size()));
}

void write(Level level, std::string_view text) {
    auto* logger = spdlog::default_logger_raw();
    const auto spd_level = to_spdlog(level);
    if (!logger || !logger->should_log(spd_level)) return;
    logger->log(spd_level, spdlog::string_view_t(text.data(), text.size()));
}

void set_level(Level level) { spdlog::set_level(to_spdlog(level)); }

Level current_level() {
    switch (spdlog::default_logger_raw()->level()) {
        case spdlog::level::trace: return Level::trace;
        case spdlog::level::debug: return Level::debug;
        case spdlog::level::info: return Level::info;
        case spdlog::level::warn: return Level::warn;
        case spdlog::level::err: return Level::error;
        case spdlog::level::critical: return Level::critical;
        default: return Level::off;
    }
}

void shutdown() { spdlog::shutdown(); }

std::string vformat(fmt::string_view format, fmt::format_args args) {
    return fmt::vformat(format, args);
}

}  // namespace agency::log
