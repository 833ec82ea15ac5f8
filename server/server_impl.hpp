// Server internals shared by the files that implement it (mcp_server.cpp, task_runtime.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <thread>
#include <unordered_map>

#include "server/mcp_server.hpp"

namespace agency::mcp {

inline std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

inline std::string dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A task while this process runs it: the record plus what the running work and its pollers
// share. Guarded by `mutex`.
struct LiveTask {
    std::mutex mutex;
    std::condition_variable_any changed;  // status, answers or waiters changed
    TaskRecord record;
    std::stop_source stop;
    std::shared_ptr<Session> session;      // legacy: the session that created it
    json responses = json::object();       // modern: answers delivered by tasks/update
    // Modern, while the work waits for answers: the questions still open given `responses`.
    // tasks/update narrows the record with it before replying, so a tasks/get that follows
    // never shows a question already answered. Called with `mutex` held.
    std::function<json()> open_questions;
    std::vector<Channel*> waiters;         // legacy: tasks/result calls streaming to the client
    std::deque<std::string> outbox;        // requests to the client waiting for a waiter
    std::unique_ptr<Channel> channel;      // what the work's RequestContext talks through
    std::shared_ptr<TaskStore> store;
    std::atomic<bool> finished{false};
    std::atomic<bool> shutting_down{false};  // the server stops: leave the record to resume
};

// Task helpers (task_runtime.cpp).
bool wants_task(const ToolDef& tool, const json& params, const RequestContext& ctx);
// Throws when a tool that runs only as a task is called without one.
void require_task_support_fits(const ToolDef& tool, const json& params, const RequestContext& ctx);
void task_set_status(LiveTask& task, TaskStatus status, std::string message, json input_requests);
void task_progress(LiveTask& task, std::string message);
json task_wait_for_answers(LiveTask& task, const json& questions,
                           std::chrono::milliseconds timeout,
                           const std::function<bool(const std::string&, const json&)>& fits);
// The body of a CallToolResult without braces: "content":..,"structuredContent":..,"isError":..
// text_size: json_string_size(structured_text) when the caller knows it, else 0.
void append_tool_result_fields(std::string& out, const ToolResult& result,
                               std::size_t text_size = 0);

struct PendingRequest {
    std::string session_id;
    std::promise<json> promise;
};

struct Server::Impl {
    ServerOptions options;
    std::string secret;
    std::vector<ToolDef> tools;
    std::unordered_map<std::string, std::size_t> tool_index;
    std::unordered_map<std::string, std::vector<std::pair<std::string, std::string>>> header_params;
    std::vector<ResourceDef> resources;
    std::vector<ResourceTemplateDef> templates;
    std::vector<PromptDef> prompts;
    std::function<json(const json&, const json&, const json&)> completion;
    std::function<bool(const ToolDef&)> tool_filter;
    std::vector<std::function<void()>> shutdown_hooks;

    std::mutex mutex;  // guards everything below
    std::unordered_map<std::string, std::shared_ptr<Session>> sessions;
    std::unordered_map<std::string, std::shared_ptr<std::stop_source>> in_flight;
    std::unordered_map<std::string, std::shared_ptr<PendingRequest>> pending;
    std::map<std::string, std::int64_t> used_states;  // nonce -> expiry (ms)
    std::atomic<std::uint64_t> next_request_id{1};
    std::atomic<std::size_t> waiting_on_clients{0};  // calls in send_request_and_wait

    // Tasks. `tasks` holds those this process runs; finished threads are joined lazily.
    std::shared_ptr<TaskStore> task_store;
    std::unordered_map<std::string, std::shared_ptr<LiveTask>> tasks;
    std::vector<std::pair<std::shared_ptr<LiveTask>, std::jthread>> task_threads;

    const ToolDef* find_tool(const std::string& name) const {
        auto it = tool_index.find(name);
        return it == tool_index.end() ? nullptr : &tools[it->second];
    }
    bool tool_visible(const ToolDef& tool) const { return !tool_filter || tool_filter(tool); }
};

}  // namespace agency::mcp
