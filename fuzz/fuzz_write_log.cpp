// What the write log takes from outside: a caller's arguments and a tool's answer become a row
// (tools/pipeline/write_log.hpp), and the operator's --rate-limit value is parsed (server/rate_limit.hpp).
// Input: a selector byte, then either a rate limit text, a line of the write log's spool
// (state/write_log_spool.hpp: read back as a row or nothing), or "ARGS\nRESULT" (any bytes;
// JSON or not). Checks: a summary never holds a confirmation_id and stays within its bound; a row's
// detail and ids are bounded and valid UTF-8 for nlohmann to dump; a rate limit text is either
// refused with std::invalid_argument or gives a limit within its documented range.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "server/rate_limit.hpp"
#include "state/write_log_spool.hpp"
#include "tools/pipeline/write_log.hpp"

namespace {

using nlohmann::json;

[[noreturn]] void fail(const char* what, std::string_view input) {
    std::fprintf(stderr, "write log: %s\ninput (%zu bytes): %.*s\n", what, input.size(),
                 static_cast<int>(std::min<std::size_t>(input.size(), 2000)), input.data());
    std::abort();
}

void rate_limit(std::string_view text) {
    agency::mcp::RateLimit limit;
    try {
        limit = agency::mcp::parse_rate_limit(text, static_cast<int>(text.size()) % 200);
    } catch (const std::invalid_argument&) {
        return;
    }
    if (limit.per_minute < 0 || limit.per_minute > 1'000'000) fail("rate out of range", text);
}

void row(std::string_view input) {
    const auto newline = input.find('\n');
    const std::string_view args_text = input.substr(0, newline);
    const std::string_view result_text =
        newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
    json args = json::parse(args_text, nullptr, false);
    // The core hands a tool only parsed JSON (an object): anything else stands for none.
    if (args.is_discarded()) args = json::object();
    agency::tools::WriteTrail trail;
    trail.sent = !input.empty() && (input[0] & 1);
    trail.confirmation_id = "cf_0123456789abcdef";
    const bool is_error = !input.empty() && (input[0] & 2);
    agency::mcp::ToolResult result =
        is_error ? agency::mcp::ToolResult::text(std::string(result_text), true)
                 : agency::mcp::ToolResult::structured(std::string(result_text));
    const auto entry = agency::tools::write_log_entry("deploy_article", args, "fuzz", trail,
                                                      result, "article_id");
    const std::string summary = entry.args_summary.dump(-1, ' ', false,
                                                        json::error_handler_t::replace);
    if (entry.args_summary.contains("confirmation_id")) fail("a confirmation_id kept", input);
    if (summary.find(trail.confirmation_id) != std::string::npos) fail("the id leaked", input);
    if (summary.size() > 12 * 6 * (40 + 80) + 64) fail("summary past its bound", input);
    if (entry.detail.size() > 204 || entry.record_id.size() > 204 || entry.client_id.size() > 204)
        fail("a field past its bound", input);
    // The store dumps the summary strictly: it must be valid UTF-8 (throws otherwise).
    (void)entry.args_summary.dump();
}

// A line of the write log's spool (state/write_log_spool.hpp), as a drain reads it back: a row
// or nothing; a row made of it goes back to a line that reads as the same row.
void spool_line(std::string_view input) {
    const json line = json::parse(input, nullptr, false, false);
    const auto row = agency::state::WriteLogSpool::from_line(line);
    if (!row) return;
    if (row->first.id.rfind("wl_", 0) != 0 || row->first.tool.empty() || row->first.outcome.empty())
        fail("a spool row without its id, tool or outcome", input);
    if (!row->first.args_summary.is_object()) fail("a spool row's summary not an object", input);
    const json again = agency::state::WriteLogSpool::to_line(row->first, row->second);
    const auto back = agency::state::WriteLogSpool::from_line(again);
    if (!back || back->first.id != row->first.id || back->first.at_ms != row->first.at_ms ||
        back->second.key != row->second.key || back->second.result != row->second.result)
        fail("a spool row does not read back as itself", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    if (data[0] & 0x80)
        rate_limit(rest);
    else if (data[0] & 0x40)
        spool_line(rest);
    else
        row(rest);
    return 0;
}
