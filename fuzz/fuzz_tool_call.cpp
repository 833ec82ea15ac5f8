// Tool arguments through validation and every tool's handler, against the sample gateway.
// Input: a tool's name (after "ui:" when the client renders MCP Apps views), a newline, then
// its arguments as JSON text (anything else is passed as a JSON string, so non-object
// arguments are tried too). The call goes through
// Server::handle_message as a modern tools/call, as a transport hands it over; the answer must
// be a JSON-RPC object with a result or an error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.hpp"

namespace {

using nlohmann::json;

agency::fuzz::ToolServer* g_server = nullptr;
std::int64_t g_id = 0;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    agency::fuzz::quiet_logs();
    g_server = agency::fuzz::start_tool_server();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input = agency::fuzz::as_text(data, size);
    const auto newline = input.find('\n');
    std::string name(input.substr(0, newline));
    // "ui:" before the name: the caller's client renders MCP Apps views (the views' app-only
    // tools, and the approval token of the confirmation stage).
    const bool views = name.starts_with("ui:");
    if (views) name.erase(0, 3);
    const std::string_view rest =
        newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
    json arguments = json::parse(rest, nullptr, false);
    if (arguments.is_discarded()) {
        // Not JSON: the text as a JSON string, when a transport could have parsed it as one
        // (nlohmann's parser refuses invalid UTF-8, so no message can carry it).
        arguments = std::string(rest);
        try {
            (void)arguments.dump();
        } catch (const json::exception&) {
            return 0;
        }
    }
    agency::mcp::Inbound in;  // the local caller, with read and write scopes
    json message = {{"jsonrpc", "2.0"},
                    {"id", ++g_id},
                    {"method", "tools/call"},
                    {"params",
                     {{"name", name},
                      {"arguments", std::move(arguments)},
                      {"_meta", agency::fuzz::modern_meta()}}}};
    if (views)
        message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
            {"extensions",
             {{"io.modelcontextprotocol/ui", {{"mimeTypes", {"text/html;profile=mcp-app"}}}}}}};
    const auto reply = g_server->server->handle_message(message, in);
    if (!reply) {  // every tools/call has an id, so it is answered
        std::fprintf(stderr, "tools/call got no answer\n");
        std::abort();
    }
    const json answer = json::parse(reply->text, nullptr, false);
    if (!answer.is_object() || (!answer.contains("result") && !answer.contains("error"))) {
        std::fprintf(stderr, "tools/call answered something that is not a JSON-RPC answer: %.2000s\n",
                     reply->text.c_str());
        std::abort();
    }
    // The typed reply says what the text says: transports decide by it and never read the text.
    const int code = answer.contains("error") ? answer["error"].value("code", 0) : 0;
    if (code != reply->error_code) {
        std::fprintf(stderr, "the reply's error_code %d differs from its text's %d\n",
                     reply->error_code, code);
        std::abort();
    }
    return 0;
}
