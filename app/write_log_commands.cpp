// write-log: the record of every action call, as JSON lines or CSV; write-log prune: the one
// way rows leave it, itself recorded. The CSV is made to be opened in a spreadsheet: every
// cell quoted, and a cell a spreadsheet would run as a formula (= + - @, tab, CR first) is
// prefixed with ' so that it reads as text. Both are safe on a terminal: control and bidi
// characters (a caller's client_id, an argument's name, a gateway's record id) are escapes.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include "base/log.hpp"

#include "app/commands.hpp"
#include "base/clock.hpp"
#include "base/text.hpp"
#include "state/write_log_spool.hpp"

namespace agency::app {

namespace {

using nlohmann::json;

constexpr const char* kColumns[] = {"at",           "principal",        "tool",
                                    "client_id",    "outcome",          "reason",
                                    "record_id",    "confirmation",     "confirmation_ref",
                                    "replayed",     "args_digest",      "args_summary",
                                    "detail",       "id",               "caller_clients"};

json row_json(const state::WriteLogEntry& e) {
    return {{"at", base::iso8601_ms(e.at_ms)},
            {"principal", e.principal},
            {"tool", e.tool},
            {"client_id", e.client_id},
            {"outcome", e.outcome},
            {"reason", e.reason},
            {"record_id", e.record_id},
            {"confirmation", e.confirmation},
            {"confirmation_ref", e.confirmation_ref},
            {"replayed", e.replayed},
            {"args_digest", e.args_digest},
            {"args_summary", e.args_summary},
            {"detail", e.detail},
            {"id", e.id},
            {"caller_clients", e.caller_clients}};
}

// "2026-11-01", "2026-11-01T09:00:00Z" or an age ("7d", "12h", "30m") as unix ms.
std::int64_t parse_when(const std::string& text, const char* option) {
    if (!text.empty() && (text.back() == 'd' || text.back() == 'h' || text.back() == 'm')) {
        const std::string digits = text.substr(0, text.size() - 1);
        if (!digits.empty() && digits.size() <= 6 &&
            digits.find_first_not_of("0123456789") == std::string::npos) {
            const std::int64_t unit = text.back() == 'd' ? 86'400'000
                                      : text.back() == 'h' ? 3'600'000
                                                           : 60'000;
            return base::Clock::system().unix_ms() - std::stoll(digits) * unit;
        }
    }
    const auto at = base::parse_utc_time(text);
    if (!at)
        throw std::invalid_argument(std::string(option) + " \"" + text.substr(0, 64) +
                                    "\": want a date (2026-11-01), a UTC time "
                                    "(2026-11-01T09:00:00Z) or an age (7d, 12h, 30m)");
    return std::chrono::duration_cast<std::chrono::milliseconds>(at->time_since_epoch()).count();
}

using base::csv_cell;

// The principal `--caller` names: as the log writes it when it has a kind ("key:", "oauth:",
// "operator:"), "local" (stdio), else a key's name.
std::string caller_principal(const std::string& caller) {
    if (caller.empty() || caller == "local" || caller.find(':') != std::string::npos) return caller;
    return "key:" + caller;
}

}  // namespace

int run_write_log(const WriteLogArgs& args) {
    state::WriteLogQuery query{.client_id = args.client_id, .tool = args.tool,
                               .principal = caller_principal(args.caller), .limit = args.limit};
    if (!args.since.empty()) query.since_ms = parse_when(args.since, "--since");
    auto store = open_state(args.state_url, args.state_db, state::SchemaUpgrade::refuse);
    // Rows a server kept while the store was unavailable go in first (issue 45), so that what
    // is shown is everything that happened.
    state::WriteLogSpool spool(state::WriteLogSpool::beside(args.state_url, args.state_db));
    if (spool.waiting() > 0) {
        const auto drained = spool.drain(*store);
        log::info("write log: {} row(s) from the spool {} appended first{}", drained.appended,
                  spool.path(),
                  drained.error.empty() ? std::string() : " (" + drained.error + ")");
    }
    const bool csv = args.format == "csv";
    if (csv) {
        std::string header;
        for (const char* c : kColumns) header += (header.empty() ? "" : ",") + csv_cell(c);
        std::cout << header << "\r\n";
    }
    std::size_t rows = 0;
    store->read_write_log(query, [&](const state::WriteLogEntry& e) {
        const json row = row_json(e);
        ++rows;
        if (!csv) {
            std::cout << base::terminal_safe_json(
                             row.dump(-1, ' ', false, json::error_handler_t::replace))
                      << '\n';
            return;
        }
        std::string line;
        for (const char* c : kColumns) {
            const json& v = row[c];
            // Text cells as visible escapes; JSON cells (args_summary) as JSON escapes.
            const std::string text =
                v.is_string()
                    ? base::terminal_safe_text(v.get_ref<const std::string&>())
                    : base::terminal_safe_json(
                          v.dump(-1, ' ', false, json::error_handler_t::replace));
            line += (line.empty() ? "" : ",") + csv_cell(text);
        }
        std::cout << line << "\r\n";
    });
    std::cout.flush();
    if (!std::cout) throw std::runtime_error("writing the write log failed");
    log::info("write log: {} row(s) from {}", rows, store->describe());
    return 0;
}

int run_write_log_prune(const WriteLogArgs& args) {
    const std::int64_t before = parse_when(args.before, "--before");
    // A prune never deletes a row written today (UTC): a --before later than the day's start
    // (the future, an age such as 0m or 2h, a time today) is refused.
    const std::int64_t now = base::Clock::system().unix_ms();
    const std::int64_t today = now - now % 86'400'000;
    if (before > today)
        throw std::invalid_argument(
            "--before " + base::terminal_safe_text(args.before.substr(0, 64)) +
            (before > now ? " is in the future" : " is later than the start of today (UTC)") +
            ": that would delete rows written today; give a date up to today's (" +
            base::iso8601_ms(today).substr(0, 10) + ") or an age of at least 1d");
    auto store = open_state(args.state_url, args.state_db, state::SchemaUpgrade::refuse);
    // Who pruned: the operator's account (rows name callers; this names the person at the
    // shell).
    const char* user = std::getenv("USER");
    const std::string who = "operator:" + std::string(user && *user ? user : std::to_string(::getuid()));
    const std::string when = base::iso8601_ms(before);
    const std::int64_t deleted = store->prune_write_log(
        before, {.principal = who,
                 .tool = "write-log prune",
                 .args_summary = {{"before", when}},
                 .confirmation = "not_needed",
                 .outcome = "ok",
                 .detail = "rows before " + when});
    log::warn("write log: {} pruned {} row(s) older than {} from {}", who, deleted, when,
              store->describe());
    std::cout << "deleted " << deleted << " row(s) older than " << when
              << "; the prune is recorded in the log\n";
    return 0;
}

}  // namespace agency::app
