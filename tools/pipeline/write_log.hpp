// The write log's rows as the action pipeline makes them (state::Store::append_write_log):
// one row per action tool call that reached the gateway or was refused on the way, with a
// bounded summary of its arguments that never holds a confirmation_id.
#pragma once

#include <string>

#include "server/tool_def.hpp"
#include "state/store.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// What the stages of one action call learned, for its row.
struct WriteTrail {
    // person | confirmation_id | not_needed | none (see state::WriteLogEntry::confirmation)
    std::string confirmation = "none";
    std::string confirmation_id;  // the one passed or issued; stored only as a digest
    bool sent = false;            // the execute stage began (the gateway may have acted)
    bool replayed = false;        // answered from a finished idempotency key
    // The clients the caller could reach (caller_clients_of), for the row.
    std::string caller_clients = "*";
    // The call's idempotency key to complete and credit slot to release, with the row (one
    // store round trip for the three).
    state::Store::Settlement settle;
};

// The write log's record of a caller's client scope: "*" (every client), else the clients
// joined by commas.
std::string caller_clients_of(const mcp::Principal& caller);

// The arguments in short: at most 12 members, strings cut to 80 characters, arrays and
// objects as their size; confirmation_id and anything named like a secret left out.
json args_summary(const json& args);

// The row for a call of `tool` that ended with `result`. `record_field` names the result
// member holding the gateway's record id (article_id, audit_id, ...).
state::WriteLogEntry write_log_entry(const std::string& tool, const json& args,
                                     const std::string& principal, const WriteTrail& trail,
                                     const mcp::ToolResult& result,
                                     const std::string& record_field);

}  // namespace agency::tools
