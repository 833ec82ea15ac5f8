// JSON-RPC 2.0 pieces shared by the MCP core and the transports. Failures are thrown as
// RpcError anywhere; exactly one place (Server::handle) turns them into error objects.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agency::mcp {

using json = nlohmann::json;

namespace error_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
// 2026-07-28
inline constexpr int header_mismatch = -32020;
inline constexpr int missing_client_capability = -32021;
inline constexpr int unsupported_protocol_version = -32022;
// This server's: a caller over its tool-call rate limit (data.retryAfterSeconds); over HTTP
// a 429 with Retry-After.
inline constexpr int rate_limited = -32029;
// legacy (2025-11-25 and earlier)
inline constexpr int resource_not_found_legacy = -32002;
}  // namespace error_code

class RpcError : public std::runtime_error {
public:
    RpcError(int code, std::string message, json data = nullptr)
        : std::runtime_error(std::move(message)), code_(code), data_(std::move(data)) {}
    int code() const noexcept { return code_; }
    const json& data() const noexcept { return data_; }

private:
    int code_;
    json data_;
};

// Limits a message from outside must keep before anything recursive (parse, copy, dump,
// schema validation) touches it: deep nesting would overflow the stack.
struct JsonLimits {
    std::size_t max_depth = 64;                // nested arrays and objects
    std::size_t max_string_bytes = 1024 * 1024;  // one string or key, escapes counted as written
};

// Checks raw JSON text against `limits` in one linear pass without recursion or allocation:
// "" when within them, otherwise why not. Also refuses NUL bytes, which nlohmann's parser
// would take for the end of the input (so "{...}\0garbage" would pass as a message).
std::string check_json_limits(std::string_view text, const JsonLimits& limits = {});

// What the core answers one message with: the response's text, and what a transport decides by
// (an HTTP status, Retry-After) said beside it, so that no transport reads the text back.
struct Reply {
    std::string text;
    int error_code = 0;              // the JSON-RPC error's code; 0: the reply is a result
    long long retry_after_s = 0;     // a rate-limited error: when to come back (seconds, >= 1)

    // A result's text: handlers answer with the text they built.
    Reply(std::string result_text) : text(std::move(result_text)) {}  // NOLINT(google-explicit-constructor)
    // A JSON-RPC error; a rate-limited one takes its Retry-After from data.retryAfterSeconds.
    static Reply error(const json& id, int code, std::string_view message,
                       const json& data = nullptr);
    bool is_error() const { return error_code != 0; }
};

// One message from outside, parsed: `message` when it is JSON within the limits, otherwise
// `error` holds the JSON-RPC error answer to send (-32700 or -32600) and `message` is null.
struct ParsedMessage {
    json message;
    std::optional<Reply> error;
};
ParsedMessage parse_message(std::string_view text, const JsonLimits& limits = {});

enum class MessageKind { request, notification, response, invalid };

// Classifies a parsed message. `invalid` covers wrong jsonrpc version, bad id type, a method
// that is not a string, params that are neither object nor array, and arrays (batches).
MessageKind classify(const json& message);

json make_error(const json& id, int code, std::string_view message, const json& data = nullptr);
std::string make_error_text(const json& id, int code, std::string_view message,
                            const json& data = nullptr);

// Appends `text` as a JSON string literal (with quotes) to `out`: the hot path builds tool
// answers by splicing raw JSON rather than through a DOM.
void append_json_string(std::string& out, std::string_view text);
// The size of `text` as a JSON string literal, quotes included: lets a caller reserve once.
std::size_t json_string_size(std::string_view text);
// As above, with `literal_size` == json_string_size(text) already known.
void append_json_string(std::string& out, std::string_view text, std::size_t literal_size);

}  // namespace agency::mcp
