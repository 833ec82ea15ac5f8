// How log lines look: text for a person (the default), or one JSON object a line for a log
// collector (--log-format json, AGENCY_LOG_FORMAT). Either way a line written while the thread
// works for a call carries the call's trace id, tool and principal (base::current_call_trace),
// and nothing else of the call: never a key, token or confirmation secret.
#pragma once

#include <memory>
#include <string>

namespace spdlog {
class formatter;
}

namespace agency::app {

// "text" or "json"; anything else throws std::invalid_argument naming the choices.
std::unique_ptr<spdlog::formatter> make_log_formatter(const std::string& format);

}  // namespace agency::app
