#include "app/log_format.hpp"

#include <cstdio>
#include <ctime>
#include <stdexcept>

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "base/text.hpp"
#include "base/trace_context.hpp"

namespace agency::app {

namespace {

void append(spdlog::memory_buf_t& dest, std::string_view text) {
    dest.append(text.data(), text.data() + text.size());
}

// Text of a text-format line (the message, a principal): base::log_safe_text, so that a line
// break, a control character or a separator in a gateway's or caller's text cannot end the line
// and start one that reads as the server's own.
void append_line_text(spdlog::memory_buf_t& dest, std::string_view text) {
    if (base::log_safe(text)) return append(dest, text);
    append(dest, base::log_safe_text(text));
}

// A JSON string, escaped; bytes that are not UTF-8 (a gateway's text) become U+FFFD, so the
// line always parses. JSON escapes C0 itself; C1, DEL, bidi controls and U+2028/U+2029 are
// escaped too (base::terminal_safe_json), for readers that break lines or act on them.
void append_json_string(spdlog::memory_buf_t& dest, std::string_view text) {
    const std::string json = nlohmann::json(std::string(text))
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (base::log_safe(json)) return append(dest, json);
    append(dest, base::terminal_safe_json(json));
}

// Text lines: the message (%V), escaped by append_line_text.
class MessageFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        append_line_text(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<MessageFlag>();
    }
};

// Text lines: "[trace_id=... tool=... principal=...] " before the message, inside a call.
class CallFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg&, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        const auto* call = base::current_call_trace();
        if (call == nullptr) return;
        append(dest, "[trace_id=");
        append(dest, call->trace.trace_id_hex());
        if (!call->tool.empty()) {
            append(dest, " tool=");
            append_line_text(dest, call->tool);
        }
        if (!call->principal.empty()) {
            append(dest, " principal=");
            append_line_text(dest, call->principal);
        }
        append(dest, "] ");
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<CallFlag>();
    }
};

// One object a line: time (UTC, milliseconds), level, message, and the call's trace_id,
// span_id, method, tool and principal when the line is written for a call.
class JsonFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const auto since_epoch = msg.time.time_since_epoch();
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
        const auto millis =
            std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
        const std::time_t t = seconds.count();
        std::tm utc{};
        ::gmtime_r(&t, &utc);
        char stamp[40];
        const auto n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
        append(dest, R"({"time":")");
        append(dest, std::string_view(stamp, n));
        char fraction[8];
        std::snprintf(fraction, sizeof fraction, ".%03dZ", static_cast<int>(millis));
        append(dest, fraction);
        append(dest, R"(","level":")");
        const auto level = spdlog::level::to_string_view(msg.level);
        append(dest, std::string_view(level.data(), level.size()));
        append(dest, R"(","message":)");
        append_json_string(dest, std::string_view(msg.payload.data(), msg.payload.size()));
        if (const auto* call = base::current_call_trace()) {
            append(dest, R"(,"trace_id":")");
            append(dest, call->trace.trace_id_hex());
            append(dest, R"(","span_id":")");
            append(dest, call->trace.span_id_hex());
            append(dest, R"(","method":)");
            append_json_string(dest, call->method);
            append(dest, R"(,"tool":)");
            append_json_string(dest, call->tool);
            append(dest, R"(,"principal":)");
            append_json_string(dest, call->principal);
        }
        append(dest, "}\n");
    }
    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<JsonFormatter>();
    }
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_log_formatter(const std::string& format) {
    if (format == "json") return std::make_unique<JsonFormatter>();
    if (format != "text")
        throw std::invalid_argument("--log-format: expected text or json, got '" + format + "'");
    auto text = std::make_unique<spdlog::pattern_formatter>();
    text->add_flag<CallFlag>('*').add_flag<MessageFlag>('V').set_pattern(
        "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %*%V");
    return text;
}

}  // namespace agency::app
