// What every tool shares: one declarative entry per tool, input validation against its
// compiled schema before any gateway request, signed cursors, the mapping of gateway failures
// to tool errors, and the raw-JSON row path that answers list calls without building a DOM.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hpp"
#include "base/sealed_token.hpp"
#include "base/untrusted_text.hpp"
#include "gateway/client.hpp"
#include "gateway/row_cut.hpp"
#include "server/tool_def.hpp"

namespace agency::tools {

using mcp::json;

struct Settings {
    std::string secret;  // seals cursors; random per start when empty
    // Rows of an answer stop before its size budget (tools/reads/read_tools.hpp answer_budget): at
    // page_budget_bytes when the caller names a limit (no answer over ~25k tokens unless it
    // raises max_bytes), at the smaller default_page_bytes (~6k tokens) when it does not.
    std::size_t page_budget_bytes = 100'000;
    std::size_t default_page_bytes = 24'000;
    std::chrono::seconds cursor_ttl{3600};
    // The most pages of 1,000 rows one scan reads (list_rankings, ranking_changes,
    // latest_rankings, list_calls): a gateway that always says there is more (one that
    // ignores offset, or an endless history) ends there, within the call's budget as well.
    int scan_max_pages = 1000;
    // What "today" is in answers that say how old their data is (tools/kit/data_age.hpp); null:
    // the process's (base::Clock::or_system). Must outlive the Toolbox.
    const base::Clock* clock = nullptr;
};

// What a cursor is bound to: replaying it with any other of these is rejected.
struct CursorBinding {
    std::string_view tool;
    std::string_view client_id;
    std::string_view principal;
    const json* filters = nullptr;  // the arguments that shape the result (not limit/cursor)
};

struct CursorPosition {
    std::int64_t offset = 0;
    json extra;  // tool-specific continuation state
};

class Toolbox {
public:
    Toolbox(std::shared_ptr<gateway::Client> gateway, Settings settings);
    gateway::Client& gateway() { return *gateway_; }
    const Settings& settings() const { return settings_; }
    const base::Clock& clock() const { return base::Clock::or_system(settings_.clock); }

    std::string issue_cursor(const CursorBinding& binding, std::int64_t offset,
                             const json& extra = nullptr) const;
    // Throws mcp::RpcError(-32602) naming why a cursor is refused.
    CursorPosition open_cursor(const CursorBinding& binding, const std::string& token) const;

    // Seals and opens the approval tokens of the approval view (tools/pipeline/view_approval.cpp).
    const base::TokenSealer& approval_sealer() const { return approval_sealer_; }

private:
    std::shared_ptr<gateway::Client> gateway_;
    Settings settings_;
    base::TokenSealer cursor_sealer_;    // purpose "cursor"
    base::TokenSealer approval_sealer_;  // purpose "view-approval"
};

using Handler = std::function<mcp::ToolResult(const json& args, mcp::RequestContext& ctx)>;
// Hears a call refused before its handler ran (its arguments, or the caller's scope).
using RefusalHook =
    std::function<void(const json& args, mcp::RequestContext& ctx, const mcp::ToolResult& refusal)>;

// One declarative entry per tool.
struct ToolSpec {
    std::string name;
    std::string toolset;  // tools/kit/toolsets.hpp: the group a selection names it by
    std::string title;
    std::string description;
    std::string input_schema;  // embedded schema name; "" = "<name>.input"
    // RFC 7386 merge patch over the embedded input schema, for what is known only at start-up
    // (read_resource's resource enum comes from the gateway's discovery).
    json input_schema_patch;
    std::string output_schema;  // "" = "<name>.output" when schemas/ has it, else none
    bool read_only = true;
    bool destructive = false;
    bool idempotent = true;
    bool open_world = true;
    bool needs_write = false;    // action tools: the caller needs the write scope
    bool interactive = false;    // asks the user or reports progress mid-call
    std::string gateway_action;  // action tools: hidden when discovery lacks it
    std::string mapping;         // how it maps to gateway reads/actions (docs/tools.md)
    Handler handler;
    // MCP tasks (see mcp::ToolDef): the work when called as a task, and how to pick it up
    // after a restart or stop it on tasks/cancel.
    mcp::TaskSupport task_support = mcp::TaskSupport::forbidden;
    Handler task_handler;
    std::function<mcp::ToolResult(const json& resume, const json& args, mcp::RequestContext&)>
        resume_task;
    std::function<void(const json& resume)> on_cancel;
    // Action tools: records a call refused before the handler (the write log).
    RefusalHook on_refused;
    // MCP Apps: the ui:// view that shows this tool's results (tools/kit/views.hpp; "" = none),
    // linked for clients that render views when the binary carries it. `app_only`: a tool of
    // the views (visibility ["app"]), hidden from the model; registered only with its view.
    std::string_view view;
    bool app_only = false;
    // Spends the agency's credits and a unit of the caller's action budget (a generation
    // action): tools/list carries `_meta: {"billable": true}` (short: every client loads the
    // list), so that a host can ask approval for these alone.
    bool billable = false;
};

// What docs/tools.md says of a tool beyond its definition: taken from its entry.
struct ToolDoc {
    std::string name;
    std::string mapping;
    std::string gateway_action;
    std::string toolset;
};
// The registered tools' docs, in registration order.
using ToolCatalog = std::vector<ToolDoc>;

// A tool error: isError, and a text block holding {"error": {reason, message, ...details}}.
mcp::ToolResult tool_error(std::string_view reason, const std::string& message,
                           const json& details = nullptr);
mcp::ToolResult tool_error(const gateway::Error& error);

// Validation of tool arguments against a compiled JSON Schema; messages name the argument
// and what is allowed.
class InputValidator {
public:
    explicit InputValidator(json schema);
    // Validates against `schema` without copying it; it must outlive the validator.
    static InputValidator borrowing(const json& schema);
    ~InputValidator();
    InputValidator(InputValidator&&) noexcept;
    // "" when valid, otherwise an actionable message.
    std::string validate(const json& args) const;

private:
    InputValidator();
    void read_outline();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Builds a list answer by splicing each row's raw JSON into the output text. Every row (and
// the extra members and note) is gateway text: its strings are cleaned of invisible
// characters and hidden HTML on the way in (base/untrusted_text.hpp; a clean row is not copied).
class RowWriter {
public:
    // Opens {"client_id":..,"resource":..,"rows":[
    RowWriter(std::string_view client_id, std::string_view resource, std::size_t budget);
    // false when the row would exceed the budget (and at least one row is written); the
    // answer then says truncated. A first row bigger than the budget goes in cut to fit
    // (gateway/row_cut.hpp), and the answer says truncated and, in its note, what was cut;
    // `members_left_out` (Row::members_left_out) is said there too.
    // The budget is counted on the form the caller's model reads (base/answer_form.hpp): for a
    // lean answer, a row's values, a null for each column it lacks and each column's name once.
    bool add(std::string_view row_json, std::size_t members_left_out = 0);
    std::size_t count() const { return count_; }
    // The budget cut the page (set by add; a caller whose own loop stops at the budget says so).
    bool truncated() const { return truncated_; }
    void set_truncated() { truncated_ = true; }
    // A sentence the answer carries as "note" (why it is empty, or what else to know).
    void set_note(std::string note) { note_ = std::move(note); }
    bool has_note() const { return !note_.empty(); }
    // Closes the object with total (omitted when unknown, as for tools that scan and filter
    // what the gateway cannot), truncated, next_cursor (omitted when empty), note (when set)
    // and any extra fields (a JSON object's members, spliced).
    std::string finish(std::optional<std::int64_t> total, const std::string& next_cursor,
                       std::string_view extra_members = {});

private:
    std::string out_;
    std::size_t budget_;
    std::size_t count_ = 0;
    bool lean_;
    std::size_t lean_used_ = 0;                   // the lean answer's bytes so far
    std::set<std::string, std::less<>> columns_;  // a lean answer's columns
    std::vector<std::string> new_columns_;        // the weighed row's columns not yet there
    bool truncated_ = false;
    std::string note_;
    std::string cut_note_;  // what was cut of which rows, said after note_
    std::size_t cut_rows_ = 0;
    std::string cut_scratch_;
    base::UntrustedJsonCleaner cleaner_;

    void note_cut(const gateway::RowCut& cut, std::size_t members_left_out);
    // What adding `row` costs the answer in the caller's form (new_columns_ says which).
    std::size_t cost_of(std::string_view row);
};

// A single record (a JSON object's text) for an answer of at most `budget` bytes: as it is when
// it fits, else cut (gateway/row_cut.hpp) and given "truncated":true and a "note" saying what
// was cut.
std::string bounded_record(std::string record, std::size_t budget);

// Rows as the gateway's page walker hands them over (gateway/page_walk.hpp).
using gateway::Row;
using gateway::RowField;

// The principal's name as cursors and confirmations bind it.
// "YYYY-MM-DDTHH:MM:SSZ" of a unix time in seconds.
std::string iso_time(std::int64_t unix_seconds);

std::string principal_of(const mcp::RequestContext& ctx);

// An argument as text: a string as it is, another JSON value dumped, "" when absent or null.
std::string string_arg(const json& args, std::string_view name);

}  // namespace agency::tools
