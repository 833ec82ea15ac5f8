// Server internals shared by the files that implement it (server_object.cpp, methods.cpp,
// rounds.cpp, task_runtime.cpp). Server::Impl is the registry, fixed once serving starts, and
// the parts that change while serving, each owning its lock: sessions, calls in flight,
// requests to clients, tasks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/clock.hpp"
#include "base/log_summary.hpp"
#include "base/periodic.hpp"
#include "base/sealed_token.hpp"
#include "server/calls_in_flight.hpp"
#include "server/mcp_server.hpp"
#include "server/method_table.hpp"
#include "server/rate_limit.hpp"

namespace agency::mcp {

inline std::string dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A task while this process runs it: the record plus what the running work and its pollers
// share. Guarded by `mutex`.
struct LiveTask {
    std::mutex mutex;
    std::condition_variable_any changed;  // status, answers or waiters changed
    TaskRecord record;
    TaskStatus counted = TaskStatus::working;  // the status last counted in the metrics
    std::stop_source stop;
    std::shared_ptr<Session> session;      // legacy: the session that created it
    std::string principal;                 // the caller it counts against (task_admission.cpp)
    json responses = json::object();       // modern: answers delivered by tasks/update
    // Modern, while the work waits for answers: the questions still open given `responses`.
    // tasks/update narrows the record with it before replying, so a tasks/get that follows
    // never shows a question already answered. Called with `mutex` held.
    std::function<json()> open_questions;
    std::vector<Channel*> waiters;         // legacy: tasks/result calls streaming to the client
    std::deque<std::string> outbox;        // requests to the client waiting for a waiter
    std::unique_ptr<Channel> channel;      // what the work's RequestContext talks through
    std::shared_ptr<TaskStore> store;
    const base::Clock* clock = nullptr;  // stamps record.updated_ms: the server's (set at start)
    std::atomic<bool> finished{false};
    std::atomic<bool> shutting_down{false};  // the server stops: leave the record to resume
};

// Whether one more task of `principal` may start, given the tasks running here; throws the
// refusal ("server busy", naming the bound) otherwise. Called with TaskRuntime::mutex held
// (task_admission.cpp).
void admit_task(const std::unordered_map<std::string, std::shared_ptr<LiveTask>>& tasks,
                const std::string& principal, const ServerOptions& options);
// The refusal of a task whose thread could not be created.
RpcError task_thread_refusal(const std::exception& e);

// Task helpers (task_runtime.cpp).
bool wants_task(const ToolDef& tool, const json& params, const RequestContext& ctx);
// Throws when a tool that runs only as a task is called without one.
void require_task_support_fits(const ToolDef& tool, const json& params, const RequestContext& ctx);
void task_set_status(LiveTask& task, TaskStatus status, std::string message, json input_requests);
void task_progress(LiveTask& task, std::string message);
json task_wait_for_answers(LiveTask& task, const json& questions,
                           std::chrono::milliseconds timeout,
                           const std::function<bool(const std::string&, const json&)>& fits);
// Shared by the runtime and the task methods (task_methods.cpp).
// The Task object of each era (the eras name two fields differently).
json task_json(const TaskRecord& t, bool legacy);
json legacy_task_json(const TaskRecord& t);
json modern_task_json(const TaskRecord& t);
// Whom a task is bound to (TaskRecord::owner).
std::string task_owner(const RequestContext& ctx);
std::string_view era_name(Era era);
RpcError unknown_task(const std::string& id);
// Saves the record and tells a legacy client with a notification path about the change.
void publish(LiveTask& task);
// Whether client capabilities declare the tasks extension (2026-07-28), and the
// requiredCapabilities a refusal names when they do not.
bool has_tasks_extension(const json& caps);
json tasks_requirement();
// Only the open questions stay on the record once some are answered (the task's mutex held).
void narrow_input_requests(LiveTask& task, json left);
// The short text that replaces the whole structuredContent in the text block:
// "25 rows of keywords for demo-plumbing (total 300); more with next_cursor. Full rows in
// structuredContent." or "Result in structuredContent: ok=true, ...".
std::string structured_summary(std::string_view json_text);
// Every member of a structured answer as compact lines and tables (server/compact_text.cpp);
// nullopt when the text is not a JSON object. Reserves padding in `json_text`, nothing else.
// With a `heading`, the lines are indented by two spaces under `heading:` (a gateway record's
// members, which then cannot read as lines of the server's own).
std::optional<std::string> compact_text(std::string& json_text, std::string_view heading = {});
// Gives a structured, successful result the compact text or the summary as its text block when
// `options` asks for it in this era; anything else is left as it is (the full JSON is then
// echoed as text).
void summarize_structured_text(ToolResult& result, const ServerOptions& options, Era era);
// Server::begin_work for any request but a probe (server/discover, ping); a failure is logged
// and tried again at the next request (server/work_start.cpp).
void begin_work_unless_probe(Server& server, std::string_view method);
// Merges options.result_meta into `meta` (an object, or null to become one).
void add_result_meta(json& meta, const ServerOptions& options);
// The body of a CallToolResult without braces: "content":..,"structuredContent":..,"isError":..
// text_size: json_string_size of the text block when the caller knows it, else 0.
void append_tool_result_fields(std::string& out, const ToolResult& result,
                               std::size_t text_size = 0);

// The index of a log level in kLogLevels; -1 when it is not one.
int log_level_index(std::string_view level);
// The protocol versions this server speaks, modern first.
json supported_versions();
// params[field] as a string; throws -32602 when it is missing or not a string.
std::string require_string(const json& params, const char* field);

// A client's answer to one of the server's requests: its result, or its error as sent. The
// error crosses threads as data and becomes an RpcError in the waiting thread (client_error):
// an exception object shared between threads through the promise is freed by whichever thread
// lets go of it last, which ThreadSanitizer cannot see ordered (libstdc++'s reference counts).
struct ClientAnswer {
    json result;
    std::optional<json> error;
};

struct PendingRequest {
    std::string session_id;
    std::string caller;      // the principal whose call waits on the answer
    std::uint64_t order = 0;  // when it was asked, among the others (the oldest gives way)
    std::promise<ClientAnswer> promise;
};

// The error a client sent in answer to one of the server's requests, whatever its shape.
RpcError client_error(const json& error);

// Legacy sessions by id (Server::register_session, make_room_for_session).
struct SessionTable {
    mutable std::mutex mutex;  // guards by_id
    std::unordered_map<std::string, std::shared_ptr<Session>> by_id;
    std::atomic<std::uint64_t> uses{0};  // Session::last_used_seq
};

// The requests this server sent to clients (elicitation, sampling), waiting for the answers.
struct ClientRequests {
    std::mutex mutex;  // guards pending and waiting_per_caller
    std::unordered_map<std::string, std::shared_ptr<PendingRequest>> pending;
    std::unordered_map<std::string, std::size_t> waiting_per_caller;  // calls waiting, by principal
    std::atomic<std::uint64_t> next_id{1};
    std::atomic<std::size_t> waiting{0};  // calls in send_request_and_wait
};

// The tasks this process runs; finished threads are joined lazily.
struct TaskRuntime {
    std::mutex mutex;  // guards live and threads
    std::unordered_map<std::string, std::shared_ptr<LiveTask>> live;
    std::vector<std::pair<std::shared_ptr<LiveTask>, std::jthread>> threads;
    std::shared_ptr<TaskStore> store;  // set at construction
    std::string instance_id;           // options.instance_id, or a random one
    base::Periodic keeper;             // shared store: renews leases, takes over orphans
};

struct Server::Impl {
    ServerOptions options;
    const base::Clock* clock = nullptr;  // options.clock, or the process's (set at construction)
    // requestState ("request-state": bound to the call, its caller and arguments; single use)
    // and tasks/list cursors ("tasks-cursor": bound to the tasks' owner).
    std::optional<base::TokenSealer> state_sealer;
    std::optional<base::TokenSealer> tasks_cursor_sealer;
    std::optional<CallRateLimiter> rate_limiter;  // units per principal (options.rate_limit)
    // Lines a caller can cause per request (over the rate limit, params of the wrong type):
    // the first of each kind, then a summary per interval (base/log_summary.hpp).
    std::optional<log::RepeatedLines> refusals;
    // Throws rate_limited (the transport's 429) when `principal` cannot afford `units` now;
    // `method` and `subject` (a URI, a prompt's name; may be "") name what was refused.
    void charge(const std::string& principal, const std::string& method,
                std::string_view subject, int units);
    // {name, version}: every modern result's _meta carries it under kMetaServerInfo.
    json server_info_meta;
    std::vector<ToolDef> tools;
    std::unordered_map<std::string, std::size_t> tool_index;
    std::unordered_map<std::string, std::vector<std::pair<std::string, std::string>>> header_params;
    std::vector<ResourceDef> resources;
    std::vector<ResourceTemplateDef> templates;
    std::vector<PromptDef> prompts;
    std::function<json(RequestContext&)> resource_lister;
    std::function<int()> resource_lister_cost;
    Server::CallerCompletion completion;
    Server::CompletionCost completion_cost;
    std::function<bool(const ToolDef&)> tool_filter;
    std::function<bool(const ToolDef&)> tool_list_filter;  // tools/list only
    Server::TaskReach task_reach;                          // Server::set_task_reach
    ToolGroups tool_groups;
    ToolSelection selection;  // the server's own (command line)
    std::vector<std::function<void()>> shutdown_hooks;
    struct WorkHook {
        std::function<void()> run;
        bool done = false;
    };
    std::vector<WorkHook> work_hooks;  // Server::on_begin_work
    std::mutex work_mutex;             // held while the hooks run
    std::atomic<bool> work_started{false};

    // The parts that change while serving, each behind its own lock.
    SessionTable sessions;
    CallsInFlight calls;  // the one cancellation registry (server/calls_in_flight.hpp)
    ClientRequests requests;
    // At the bound of calls waiting on clients: the oldest waiting call of the caller holding
    // the most (strictly more than `newcomer`) is answered with an error now, freeing its
    // place (server/rounds.cpp). False when `newcomer` holds the most (or as many) itself.
    bool give_way_for(const std::string& newcomer);
    TaskRuntime tasks;

    const ToolDef* find_tool(const std::string& name) const {
        auto it = tool_index.find(name);
        return it == tool_index.end() ? nullptr : &tools[it->second];
    }
    bool tool_visible(const ToolDef& tool) const { return !tool_filter || tool_filter(tool); }
    bool task_reached(const TaskRecord& task, const Principal& caller) const {
        return !task_reach || task_reach(task.tool, task.arguments, caller);
    }
    std::int64_t now_ms() const { return clock->unix_ms(); }
    // A client's answer to one of this server's requests: wakes the call waiting for it.
    void deliver_response(const json& message, const json& id, const Inbound& in);
    void handle_notification(const std::string& method, const json& params, const Inbound& in);
    // What every modern result carries besides its own fields: resultType and serverInfo.
    void add_modern_result_fields(json& result) const {
        result["resultType"] = "complete";
        add_server_info(result["_meta"]);
    }
    void add_server_info(json& meta) const {
        meta[std::string(kMetaServerInfo)] = server_info_meta;
    }
};

// The handlers of the method table (method_table.hpp). A friend of Server and RequestContext:
// they answer from the registry and the request's private state.
struct Methods {
    // The response carrying `result`, with the modern fields when the era is modern.
    static std::optional<Reply> complete(Server& server, const Request& r, json result);

    static std::optional<Reply> initialize(Server& server, const Request& r);
    static std::optional<Reply> ping(Server& server, const Request& r);
    static std::optional<Reply> server_discover(Server& server, const Request& r);
    static std::optional<Reply> logging_set_level(Server& server, const Request& r);
    static std::optional<Reply> tools_list(Server& server, const Request& r);
    static std::optional<Reply> tools_call(Server& server, const Request& r);
    static std::optional<Reply> resources_list(Server& server, const Request& r);
    static std::optional<Reply> resources_templates_list(Server& server, const Request& r);
    static std::optional<Reply> resources_read(Server& server, const Request& r);
    static std::optional<Reply> resources_subscribe(Server& server, const Request& r);
    static std::optional<Reply> resources_unsubscribe(Server& server, const Request& r);
    static std::optional<Reply> prompts_list(Server& server, const Request& r);
    static std::optional<Reply> prompts_get(Server& server, const Request& r);
    static std::optional<Reply> completion_complete(Server& server, const Request& r);

    // Tasks (task_runtime.cpp).
    static constexpr std::string_view kNotInTasksExtension =
        " (the 2026-07-28 tasks extension has tasks/get, tasks/update and tasks/cancel)";
    struct FoundTask {
        std::string id;
        std::shared_ptr<TaskStore> store;
        std::shared_ptr<LiveTask> live;  // null when no thread of this process runs it
        // The record as it is now: the running task's, else the stored one.
        TaskRecord current() const;
    };
    // What every task method but tasks/list starts from: a modern caller declared the tasks
    // extension, and params.taskId names a task of this caller that has not expired. Throws
    // otherwise.
    static FoundTask find_task(Server& server, const Request& r);
    static std::optional<Reply> tasks_list(Server& server, const Request& r);
    static std::optional<Reply> tasks_get(Server& server, const Request& r);
    static std::optional<Reply> tasks_cancel(Server& server, const Request& r);
    static std::optional<Reply> tasks_update(Server& server, const Request& r);
    static std::optional<Reply> tasks_result(Server& server, const Request& r);
    // Any other tasks/ method: refused as unknown once its task is found.
    static std::optional<Reply> tasks_other(Server& server, const Request& r);
};

}  // namespace agency::mcp
