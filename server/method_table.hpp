// The MCP methods this server answers, one entry each: the facts the core and the transports
// decide by (which era has it, where it runs, whether it talks back, what Mcp-Name carries) and
// the handler. Every place that asks such a fact about a method reads it here, so adding a
// method is adding one entry.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/mcp_server.hpp"

namespace agency::mcp {

// The eras a method exists in (a bit set of Era).
enum EraSet : unsigned char { kLegacyEra = 1, kModernEra = 2, kBothEras = 3 };

// Where a transport that has workers runs a request: inline keeps messages in order and cheap;
// methods that may wait on a gateway or on the client go to a worker.
enum class Runs : unsigned char { inline_here, on_worker };

// Whether answering may send notifications or requests before the response (Server::may_stream).
enum class TalksBack : unsigned char {
    never,
    always,          // relays another piece of work's requests and progress
    when_tool_does,  // tools/call: a progressToken, or an interactive tool the client can answer
};

// One request being answered; handlers read it and reply with the response's text.
struct Request {
    const std::string& method;
    const json& id;
    const json& params;
    RequestContext& ctx;
    const Inbound& in;
};

struct MethodEntry {
    std::string_view name;
    unsigned char eras = kBothEras;
    bool opens_session = false;      // legacy: initialize, which needs no era beforehand
    bool before_initialize = false;  // legacy: answered before a session is initialized
    Runs runs = Runs::inline_here;
    TalksBack talks_back = TalksBack::never;
    // The params field the modern HTTP Mcp-Name header must equal; empty: no Mcp-Name.
    std::string_view name_param;
    // Appended to "method not found: <name>" when called in an era it does not exist in;
    // empty: the generic wording.
    std::string_view absent_note;
    std::optional<Reply> (*handler)(Server& server, const Request& request) = nullptr;
};

// The entry for `method`; methods under "tasks/" that no entry names share one entry (the
// tasks extension checks its capability and the task before saying the method is unknown).
// nullptr: no such method.
const MethodEntry* find_method(std::string_view method);

}  // namespace agency::mcp
