// What a tool, resource or prompt sees of the MCP core: its definition, the caller, the request
// it runs in and the result it returns. Tools include this, not server/mcp_server.hpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "server/json_rpc.hpp"

namespace agency::mcp {

enum class Era { legacy, modern };

// Narrows the tools a caller sees and may call: tool groups (toolsets) and tool names to keep,
// tool names to drop (dropping wins). Empty: narrows nothing. Over HTTP a request sets its own
// (X-MCP-Toolsets, X-MCP-Tools, X-MCP-Exclude-Tools), on top of the server's (set_tool_selection).
struct ToolSelection {
    std::vector<std::string> groups;  // group names, or aliases (ToolGroups::aliases)
    std::vector<std::string> tools;
    std::vector<std::string> exclude;
    bool narrows() const { return !groups.empty() || !tools.empty() || !exclude.empty(); }
};

// The groups tools belong to (ToolDef::group), as a selection names them.
struct ToolGroups {
    // Names standing for several groups, e.g. "all" and "default".
    std::map<std::string, std::vector<std::string>, std::less<>> aliases;
    // Groups that a selection by group always includes (e.g. the one that finds the ids every
    // other tool takes); a tool of theirs is dropped only by name.
    std::vector<std::string> always;
};

// Who is calling: from the HTTP key, or the stdio process's own configuration.
struct Principal {
    std::string name = "local";
    std::vector<std::string> scopes{"read", "write"};
    ToolSelection selection;  // what this request narrows the tools to (HTTP headers)
    // An OAuth caller may obtain scopes it lacks (step-up): tools/list shows it the tools
    // that need them, and a call that needs one is answered 403 insufficient_scope.
    bool may_step_up = false;
    // A key or an access token proved who is calling (an authorization context): tasks bind
    // to the caller, from any session on any instance. False for stdio and HTTP without auth.
    bool authenticated = false;
    // The clients this caller may reach (issue 35: a key's `clients`, an OAuth claim); empty:
    // every client the gateway key reaches. A client outside it does not exist for the caller.
    std::vector<std::string> clients;
    // Generation actions this caller may run per budget window (a key's `monthly_actions`);
    // nullopt: the server's default.
    std::optional<std::int64_t> action_budget;
    bool has_scope(std::string_view scope) const;
    // Whether `client_id` is among `clients` (always, when `clients` is empty).
    bool reaches_client(std::string_view client_id) const;
};

// The path back to the client while one request runs: notifications and (legacy) requests.
class Channel {
public:
    virtual ~Channel() = default;
    virtual void send(const std::string& message) = 0;
    // Whether server-to-client requests can reach the client on this path.
    virtual bool can_send_requests() const = 0;
};

// Legacy session state, created by initialize. Shared by the requests of that session.
struct Session {
    std::string id;  // HTTP Mcp-Session-Id ("" on stdio)
    std::string protocol_version;
    json client_capabilities = json::object();
    json client_info = json::object();
    std::atomic<bool> initialized{false};
    std::atomic<int> log_level{1};  // index into the syslog levels; 1 = info
    Principal principal;
    std::mutex mutex;                      // guards subscriptions and unanswered
    std::vector<std::string> subscriptions;
    // Capabilities the client declared but whose requests it answered "Method not found"
    // (elicitation, sampling, roots): taken as absent for the rest of the session.
    std::vector<std::string> unanswered;
    std::atomic<std::int64_t> last_used_ms{0};
    // Orders uses within one millisecond: the least recently used session is the one with the
    // lowest (Server::make_room_for_session).
    std::atomic<std::uint64_t> last_used_seq{0};
    // Sends a message to the client outside of any request (list_changed, resource updates);
    // set by transports that have such a path (stdio), empty otherwise.
    std::function<void(const std::string&)> notify;
};

class Server;
struct LiveTask;
struct Methods;

// Raised by RequestContext::ask in the modern era when the answer is not yet known: the core
// answers with an input_required result, and the client retries with the responses.
struct InputRequired {
    json requests;  // {key: {method, params}, ...}
};

// What a handler may use while it runs.
class RequestContext {
public:
    Era era = Era::legacy;
    std::string protocol_version;
    json client_capabilities = json::object();
    Principal principal;
    json request_id;                 // the JSON-RPC id of this request
    json progress_token;             // null when the caller asked for no progress
    std::stop_token stop;            // cancellation (notifications/cancelled, closed stream)
    std::shared_ptr<Session> session;  // legacy only
    json meta = json::object();       // params._meta as received

    // Sends a notification tied to this request (dropped when there is no path back).
    void notify(std::string_view method, json params) const;
    // notifications/progress, only when the caller sent a progressToken.
    void progress(double progress, std::optional<double> total = std::nullopt,
                  std::string_view message = {}) const;
    // notifications/message when the client's log level lets it through.
    void log(std::string_view level, json data, std::string_view logger = "agency-mcp") const;

    // Asks the client something (elicitation/create, sampling/createMessage) and returns its
    // result. Legacy: a request over this request's channel, waiting for the answer. Modern:
    // returns the matching inputResponses entry, or throws InputRequired. `key` names the
    // question so that a retried modern request can match answers to questions.
    // With `sealed_only` (the default), a modern answer counts only if this server asked that
    // question in an earlier round (its key is in the sealed requestState): a client cannot
    // pre-answer a confirmation it was never shown.
    json ask(const std::string& key, const std::string& method, const json& params,
             bool sealed_only = true) const;
    // Several questions at once (modern: one input_required result carrying all that are still
    // unanswered). `questions` is {key: {method, params}}; returns {key: answer}.
    json ask_all(const json& questions, bool sealed_only = true) const;
    // Whether the client declared a capability ("elicitation", "sampling", "roots"...).
    bool client_supports(std::string_view capability) const;
    // Whether this caller's client renders MCP Apps views (it declares the
    // io.modelcontextprotocol/ui extension with text/html;profile=mcp-app) and the server
    // links them (ServerOptions::views). Only then do tools carry `_meta.ui`, app-only tools
    // exist and views are listed as resources.
    bool renders_views() const;
    // Whether a call of the tool `name` from this request would reach it: the server has it and
    // shows it, the server's and this request's tool selection keep it (read-only included),
    // and the caller holds its scopes. A tool that acts for another (view_decide) asks this
    // for the tool it runs.
    bool tool_selected(std::string_view name) const;

    // Inside a task: the id of the task this work belongs to ("" otherwise).
    std::string task_id() const;
    // Inside a task: records how to pick the work up after a restart (ToolDef::resume_task).
    void set_task_resume(json resume) const;

private:
    friend class Server;
    friend struct Methods;
    std::shared_ptr<LiveTask> task_;         // set while running as a task
    Channel* channel_ = nullptr;
    Server* server_ = nullptr;
    json input_responses_ = json::object();  // modern: answers gathered over the rounds
    json asked_ = json::array();             // modern: keys asked in earlier rounds (sealed)
};

struct ToolResult {
    json content = json::array();
    std::string structured_text;  // serialized structuredContent; "" = none
    // With content empty and structured_text set: the one text block beside it ("" = the
    // structured JSON itself). Kept as a string so the answer escapes it in one pass.
    std::string text_block;
    // The text of that one block: text_block, or the structured JSON itself.
    const std::string& block_text() const {
        return text_block.empty() ? structured_text : text_block;
    }
    bool is_error = false;
    json meta;                     // result _meta (null = none)
    // The structured answer is a gateway record: the compact text writes its members indented
    // under this heading ("" = none), so that no member (a `confirmation_id`, say) can read as
    // a line of the server's own.
    std::string record_heading;

    static ToolResult text(std::string text, bool is_error = false);
    // structuredContent from raw JSON text, echoed as the text block as the spec suggests.
    static ToolResult structured(std::string json_text);
};

// Whether a tool may run as a task (MCP Tasks): forbidden, optional (the caller chooses), or
// required (callers without task support are refused).
enum class TaskSupport { forbidden, optional, required };

struct ToolDef {
    std::string name;
    std::string title;
    std::string description;
    json input_schema;
    json output_schema;   // null = none
    // Set instead of the two above for schemas that outlive the server (the embedded ones),
    // so registering a tool does not copy its schemas (a tenth of a cold start's work).
    const json* shared_input_schema = nullptr;
    const json* shared_output_schema = nullptr;
    const json& input() const { return shared_input_schema ? *shared_input_schema : input_schema; }
    const json& output() const {
        return shared_output_schema ? *shared_output_schema : output_schema;
    }
    // What tools/list shows instead of input()/output() when set: the schema a caller needs to
    // write a call, without the bounds that only guard the server (the full one validates).
    std::shared_ptr<const json> listed_input_schema;
    std::shared_ptr<const json> listed_output_schema;
    const json& listed_input() const {
        return listed_input_schema ? *listed_input_schema : input();
    }
    const json& listed_output() const {
        return listed_output_schema ? *listed_output_schema : output();
    }
    std::string group;    // the toolset it belongs to ("" = none); see ToolSelection
    json annotations;     // null = none
    json icons;           // null = none
    json meta;            // null = none
    // MCP Apps: the tool's `_meta.ui` ({resourceUri, visibility}), published only to clients
    // that render views (RequestContext::renders_views); null = none. A tool whose visibility
    // is ["app"] is for views only: others neither see nor may call it.
    json ui;
    bool app_only() const;
    std::vector<std::string> required_scopes;  // e.g. {"write"} for action tools
    // Client capabilities the tool cannot work without, e.g. {"sampling": {}}: modern callers
    // lacking them get -32021; legacy callers a tool error.
    json required_client_capabilities;
    // Sends notifications or asks the client mid-call; transports then stream the answer.
    bool interactive = false;
    std::function<ToolResult(const json& arguments, RequestContext& ctx)> handler;
    // Hears a call the core refused before the handler ran (the caller lacks a required
    // scope), with the refusal the caller gets; e.g. to record it. Unset: nothing.
    std::function<void(const json& arguments, RequestContext& ctx, const ToolResult& refusal)>
        on_refused;

    // --- tasks ---
    TaskSupport task_support = TaskSupport::forbidden;
    // Runs in the request before the task is created; may ask the client (a modern caller
    // then gets input_required rounds first). Answers stay visible to the task's work.
    std::function<void(const json& arguments, RequestContext& ctx)> before_task;
    // The work of a task; unset: `handler`.
    std::function<ToolResult(const json& arguments, RequestContext& ctx)> task_handler;
    // Picks the work up after a restart from what the work saved with set_task_resume; unset
    // (or nothing saved): such a task ends failed, saying its outcome is unknown.
    std::function<ToolResult(const json& resume, const json& arguments, RequestContext& ctx)>
        resume_task;
    // Called when a task is cancelled, with what the work saved (e.g. to drop a queued job).
    std::function<void(const json& resume)> on_cancel;
};

struct ResourceDef {
    std::string uri;
    std::string name;
    std::string title;
    std::string description;
    std::string mime_type;
    // Returns the `contents` array of resources/read.
    std::function<json(RequestContext& ctx)> read;
    // An MCP Apps view (ui://): listed only to clients that render views; read by anyone.
    bool view = false;
    // What a read is charged against the caller's rate limit, in units (server/rate_limit.hpp:
    // one per gateway read it may make, at least one).
    int cost = 1;
};

struct ResourceTemplateDef {
    std::string uri_template;
    std::string name;
    std::string description;
    std::string mime_type;
    // Returns the `contents` array, or nullopt when the URI is not one of this template's.
    std::function<std::optional<json>(const std::string& uri, RequestContext& ctx)> read;
    std::string title;  // last, so that positional initializers stay as they were
    // What reading `uri` is charged (units, as ResourceDef::cost), or 0 when the URI is not
    // this template's; known before the read runs. Unset: 1 for any URI.
    std::function<int(const std::string& uri)> cost;
};

struct PromptDef {
    std::string name;
    std::string title;
    std::string description;
    json arguments = json::array();  // [{name, description, required}]
    // Returns {description?, messages}.
    std::function<json(const json& arguments, RequestContext& ctx)> get;
    int cost = 1;  // units charged against the caller's rate limit (as ResourceDef::cost)
};

}  // namespace agency::mcp
