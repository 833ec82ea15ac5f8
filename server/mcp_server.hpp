// The MCP core: both protocol eras over one registry of tools, resources and prompts.
// Legacy (2025-03-26 .. 2025-11-25): initialize, sessions, server-to-client requests.
// Modern (2026-07-28): stateless, per-request _meta, server/discover, input_required results.
// Transports hand it raw messages and a Channel for messages that travel back during a request;
// it knows nothing of stdio or HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "server/calls_in_flight.hpp"
#include "server/json_rpc.hpp"
#include "server/protocol.hpp"
#include "server/rate_limit.hpp"
#include "server/task_store.hpp"
#include "server/tool_def.hpp"

namespace agency::base {
class Clock;
}

namespace agency::mcp {

bool is_legacy_version(std::string_view version);
bool is_supported_version(std::string_view version);

struct ServerInfo {
    std::string name = "agency-mcp";
    std::string title = "Agency MCP";
    std::string version = AGENCY_VERSION;  // CMake project() VERSION
    std::string instructions;
};

// What a tool result's text block holds beside structuredContent (docs/design.md, "Text beside
// structuredContent"). automatic: the compact rendering in the 2026-07-28 era, the whole JSON
// in the legacy eras (their spec asks for it; clients such as the AI SDK parse it); full,
// compact or summary: that in every era. summary is a one-line count for hosts known to show
// their model structuredContent. Tool errors keep their text either way.
enum class StructuredText { automatic, full, compact, summary };

// What structuredContent holds (server/lean_answer.hpp). automatic: lean for the hosts known to
// hand their model structuredContent alone (Claude Code, Copilot CLI, opencode, Codex, by
// clientInfo.name), full for everyone else; lean or full: that for every client.
enum class StructuredContent { automatic, full, lean };

struct ServerOptions {
    ServerInfo info;
    // Merged into the _meta of every tools/call result (success or tool error, tasks' too) and
    // resources/read result; e.g. a flag saying the answers are sample data. Null: none.
    json result_meta;
    StructuredText structured_text = StructuredText::automatic;
    StructuredContent structured_content = StructuredContent::automatic;
    // What stamps and expires tasks, sessions and requestStates; null: the process's (base::Clock::or_system).
    // Must outlive the server.
    const base::Clock* clock = nullptr;
    std::string state_secret;  // HMAC key for sealed requestState; random when empty
    // How long a call waits on a client's answer (an elicitation form a person may leave
    // open): three minutes, so that an unanswered form does not hold its place for ten.
    std::chrono::milliseconds ask_timeout{3 * 60 * 1000};
    std::chrono::seconds state_ttl{600};
    // MCP Apps views: link them for clients that declare the extension (--no-ui: never).
    bool views = true;
    std::size_t tools_page_size = 100;
    std::size_t resources_page_size = 100;  // resources/list: registered, then listed ones
    std::int64_t list_ttl_ms = 60'000;
    // Tasks: where records live (memory when null), how long they are kept, polling advice.
    std::shared_ptr<TaskStore> task_store;
    std::int64_t task_ttl_ms = 60 * 60 * 1000;
    std::int64_t task_max_ttl_ms = 24 * 60 * 60 * 1000;
    std::int64_t task_poll_ms = 500;
    // Tasks running here at once, and of them, per caller (a principal: a key's name or an
    // OAuth subject, across all its sessions). Each running task holds a thread, so the
    // command line keeps max_live_tasks below what the process may create
    // (app/process.hpp, fit_tasks_to_thread_limit). Past three quarters of max_live_tasks a
    // caller may start one only while another caller holds more: the one holding the most
    // gives way first (server/task_admission.cpp).
    std::size_t max_live_tasks = 256;
    std::size_t max_live_tasks_per_caller = 32;
    // With a store several instances share (TaskStore::shared()): this process's name among
    // them (random when empty) and how long a task stays its own without a renewal. A task
    // whose instance died is resumed (or failed, outcome unknown) by another after that.
    std::string instance_id;
    std::int64_t task_lease_ms = 15'000;
    JsonLimits json_limits;  // what a message from outside may hold (depth, string length)
    // Calls that may wait at once on a client's answer to a server-to-client request
    // (elicitation, sampling, roots). A waiting call's worker queue runs another call in its
    // place (WorkQueue::Waiting), so each waiting call costs a thread: beyond this bound one
    // more fails at once (the tool sees an error) instead.
    std::size_t max_waiting_on_clients = 64;
    // Of them, held by one caller (principal) at once: the rest stay for the others.
    std::size_t max_waiting_per_caller = 16;
    // Units per principal (server/rate_limit.hpp): a token bucket each, charged by tools/call
    // (one unit), resources/read, prompts/get, completion/complete and a resources/list that
    // reads the gateway (their cost); off by default here (the command line's default is on).
    // Over it: error_code::rate_limited, before the request reaches the gateway.
    RateLimit rate_limit;
};

struct MethodEntry;  // server/method_table.hpp

// One message as it travels from a transport into the core: read once (classified, its method's
// entry found), so that neither the transport (where it runs, whether it streams, what Mcp-Name
// must say) nor the core (dispatch, era, metrics) looks it up again.
struct Incoming {
    json message;
    MessageKind kind = MessageKind::invalid;
    json id;                             // null for a notification
    std::string method;                  // "" for a response
    const MethodEntry* entry = nullptr;  // nullptr: not a method this server answers
    const json& params() const;          // the params object, or an empty one
};
Incoming read_incoming(json message);

// Per-message facts from the transport.
struct Inbound {
    // The era when the transport has decided it (HTTP routes by headers); unset: the core
    // decides by params._meta (stdio).
    std::optional<Era> era;
    std::shared_ptr<Session> session;  // legacy session, when the transport has one
    Principal principal;               // the caller (from HTTP auth or process config)
    Channel* channel = nullptr;        // path back during this request (may be null)
    std::stop_token stop;              // fires when the transport loses the caller
    bool http = false;
    // The HTTP `traceparent` header as received ("" when none); params._meta's wins.
    std::string traceparent;
};

class Server {
public:
    explicit Server(ServerOptions options = {});
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Registration (before serving; tools may also be replaced later, see set_tool_filter).
    void add_tool(ToolDef tool);
    void add_resource(ResourceDef resource);
    void add_resource_template(ResourceTemplateDef resource_template);
    void add_prompt(PromptDef prompt);
    // resources/list's entries beyond the registered resources ({uri, name, ...} objects,
    // e.g. one per gateway client), asked on every list; they are read through a template.
    // `cost`: the units a list is charged against the caller's rate limit (0 when the entries
    // cost the gateway nothing now, e.g. cached); unset: nothing.
    void set_resource_lister(std::function<json(RequestContext& ctx)> lister,
                             std::function<int()> cost = {});
    // completion/complete: (ref, argument, context) -> {values, total?, hasMore?}. `cost`:
    // the units one is charged (at least 1), from the same arguments; unset: 1.
    using CompletionCost =
        std::function<int(const json& ref, const json& argument, const json& context)>;
    void set_completion(std::function<json(const json& ref, const json& argument,
                                           const json& context)> handler,
                        CompletionCost cost = {});
    // The same, told who asks (a caller limited to some clients is offered those only).
    using CallerCompletion = std::function<json(const json& ref, const json& argument,
                                                const json& context, const Principal& caller)>;
    void set_caller_completion(CallerCompletion handler, CompletionCost cost = {});
    // The instructions initialize and server/discover give (before serving).
    void set_instructions(std::string instructions);
    // The groups tools belong to, for ToolSelection (before serving).
    void set_tool_groups(ToolGroups groups);
    // The server's own selection (command line): applies to every request, before the request's
    // own. Throws std::invalid_argument naming an unknown group or tool.
    void set_tool_selection(ToolSelection selection);
    // "" when every name in `selection` is a known group, alias or tool; else what is wrong.
    std::string check_tool_selection(const ToolSelection& selection) const;
    // Whether a tool is in the server's selection and in `principal`'s.
    bool tool_selected(const ToolDef& tool, const Principal& principal) const;
    // Whether `principal` may call the tool `name`: registered, visible, selected and its
    // scopes held (RequestContext::tool_selected).
    bool offers_tool(std::string_view name, const Principal& principal) const;
    // Whether a caller reaches what a task of `tool` with `arguments` works on (tools: the
    // client its client_id names, under the caller's scope now). A task it does not reach reads
    // as an unknown task on every task method and tasks/list leaves it out (a key narrowed
    // since); a call it would not reach runs as a plain call (the tool refuses it). Unset: all.
    using TaskReach = std::function<bool(const std::string& tool, const json& arguments,
                                         const Principal& caller)>;
    void set_task_reach(TaskReach reaches);
    // Hides tools (e.g. an action absent from the gateway's discovery); evaluated per list.
    void set_tool_filter(std::function<bool(const ToolDef&)> visible);
    // Hides tools from tools/list only: a call still reaches the tool, which says why it cannot
    // run (e.g. the gateway key lacks the write scope).
    void set_tool_list_filter(std::function<bool(const ToolDef&)> listed);
    // Tells every legacy session with a notification path that the tool list changed.
    void notify_tools_changed();
    // Cancels every request running now, as notifications/cancelled would (a drain past its
    // time): each tool sees its stop token. Task work is not a request; it stops with the server.
    void cancel_calls();
    // The calls taken and not yet answered: the one registry notifications/cancelled reaches.
    // A transport that queues a call enters it here when it queues it.
    CallsInFlight& calls_in_flight();
    // Sends notifications/resources/updated to every legacy session with a notification path
    // that subscribed to `uri`; with `principal`, only to sessions of that principal (what
    // one caller owns is not announced to another).
    void notify_resource_updated(const std::string& uri, std::string_view principal = {});
    // Runs first when the server is destroyed, before anything it owns goes away: stops what
    // calls back into it from other threads (e.g. a discovery refresher).
    void on_shutdown(std::function<void()> stop);

    // Picks up tasks a previous process left unfinished (call once, after registration). With
    // a shared store: only those whose instance died, now and from then on, and cancels made
    // on other instances reach the tasks running here.
    void resume_tasks();

    // Work that touches the state store or the gateway for a session's sake (picking up jobs
    // and tasks a previous process left): run once, by begin_work(), which the first request
    // other than server/discover or ping calls (a client that probes with a process of its
    // own then writes nothing, issue 29), or the caller directly (HTTP: a service starts it at
    // once). Register before serving; hooks run in order, on the thread that begins the work.
    // begin_work throws the first hook's failure (the others still ran); a failed hook runs
    // again at the next call, one that succeeded never again.
    void on_begin_work(std::function<void()> work);
    void begin_work();

    // Handles one raw message; returns the reply, or nullopt for notifications and responses.
    // Never throws.
    std::optional<Reply> handle(std::string_view text, const Inbound& in);
    // As above for a message a transport has read.
    std::optional<Reply> handle_message(const Incoming& message, const Inbound& in);
    // As above for a parsed message (reads it first).
    std::optional<Reply> handle_message(const json& message, const Inbound& in);

    // Whether answering `message` may send notifications or requests before the response:
    // transports then open a stream for it instead of a plain JSON answer.
    bool may_stream(const Incoming& message, const Session* session) const;
    // Whether answering `message` may wait long on something outside (a gateway action, a
    // person, a task's end): a tools/call of a tool that is not read-only, and tasks/result.
    // Transports run such calls in a lane of their own, so that reads never queue behind them.
    bool may_wait_long(const Incoming& message) const;
    // The scope ("read", "write") a tools/call needs that `principal` lacks, for a transport
    // that answers it with a step-up challenge before the call runs; nullopt otherwise (the
    // call then goes on, and meets the tool's own checks).
    std::optional<std::string> missing_scope(const Incoming& message,
                                             const Principal& principal) const;

    // Sessions (legacy): created by initialize.
    std::shared_ptr<Session> create_session(std::string id);
    void register_session(const std::shared_ptr<Session>& session);
    void forget_session(const std::string& id);
    std::shared_ptr<Session> find_session(const std::string& id) const;
    std::size_t session_count() const;
    // Before a session of `principal` opens (HTTP initialize): when `principal` already holds
    // `max_per_principal` sessions, its own least recently used one is closed; when all
    // `max_total` are open, the least recently used session of the principal holding the most
    // (which may be `principal` itself) is closed. Returns the ids closed (server/sessions.cpp).
    std::vector<std::string> make_room_for_session(const std::string& principal,
                                                   std::size_t max_total,
                                                   std::size_t max_per_principal);
    // Forgets sessions idle for longer than `idle`; returns how many.
    std::size_t expire_sessions(std::chrono::milliseconds idle);

    const ServerOptions& options() const;
    // Tools visible to a principal (scope and filter applied; a principal that may step up sees
    // the tools of scopes it lacks), in registration order.
    std::vector<const ToolDef*> visible_tools(const Principal& principal) const;
    json capabilities(Era era) const;
    // The (argument, header name) pairs a tool mirrors into Mcp-Param-* headers: its input
    // schema's properties marked "x-mcp-header" (2026-07-28).
    const std::vector<std::pair<std::string, std::string>>& header_params(
        const std::string& tool) const;

    // Internal, for RequestContext.
    json send_request_and_wait(const RequestContext& ctx, const std::string& method,
                               const json& params);

private:
    friend struct Methods;
    // handle_message without its guard: may throw.
    std::optional<Reply> dispatch_message(const Incoming& message, const Inbound& in);
    // A request, once the era is known: calls its entry's handler.
    std::optional<Reply> dispatch_request(const Incoming& message, RequestContext& ctx,
                                          const Inbound& in);
    // Decides the request's era from the transport's verdict, _meta and the session, and
    // fills ctx with it; throws when the request has none.
    void resolve_era(const Incoming& message, const Inbound& in, RequestContext& ctx);
    std::optional<Reply> call_tool(const json& id, const json& params, RequestContext& ctx);
    // Modern multi-round-trip: restores answers from a sealed requestState bound to `target`.
    void restore_round(const std::string& target, const json& arguments, const json& params,
                       RequestContext& ctx);
    std::string start_task(const ToolDef& tool, const json& id, const json& arguments,
                           const json& params, RequestContext& ctx);
    void launch_task(std::shared_ptr<LiveTask> task, const ToolDef* tool, RequestContext ctx,
                     bool resumed);
    // A task left unfinished by a process that stopped: resumed here, or failed with "outcome
    // unknown" when its tool cannot resume it (task_sharing.cpp).
    void resume_task(TaskRecord record);
    // Shared store: the lease keeper's round, and a cancel made on another instance.
    void keep_task_leases();
    void cancel_here(const std::string& task_id);
    std::string input_required_text(const json& id, const std::string& target,
                                    const json& arguments, const RequestContext& ctx,
                                    const InputRequired& question);

    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace agency::mcp
