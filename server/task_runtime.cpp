// MCP Tasks for both eras over one runtime: each task runs its tool's work on its own thread;
// records go to the TaskStore on every change, so a durable store lets pollers and a restarted
// process see them. See server/task_store.hpp for the wire shapes of each era.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <system_error>

#include "base/log.hpp"

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "base/progress_notes.hpp"
#include "server/server_impl.hpp"
#include "server/telemetry.hpp"

namespace agency::mcp {

namespace {

// The channel a task's work talks through: notifications go to whoever waits on the task
// (legacy tasks/result streams); a request to the client is held until someone waits.
class TaskChannel : public Channel {
public:
    explicit TaskChannel(LiveTask& task) : task_(task) {}
    void send(const std::string& message) override {
        // The core serializes with sorted keys, so a request (it has an id) starts with "id";
        // a notification with "jsonrpc". Searching the text for "id" would also match params.
        const bool request = message.starts_with(R"({"id":)");
        std::lock_guard lock(task_.mutex);
        if (task_.waiters.empty()) {
            if (request) task_.outbox.push_back(message);
            return;
        }
        if (request) {
            task_.waiters.front()->send(message);  // one answer is expected
            return;
        }
        for (Channel* w : task_.waiters) w->send(message);
    }
    bool can_send_requests() const override { return true; }

private:
    LiveTask& task_;
};

}  // namespace

// The Task object; the eras name two fields differently (ttl/ttlMs, pollInterval/...Ms).
json task_json(const TaskRecord& t, bool legacy) {
    json out = {{"taskId", t.id},
                {"status", to_string(t.status)},
                {"createdAt", base::iso8601_ms(t.created_ms)},
                {"lastUpdatedAt", base::iso8601_ms(t.updated_ms)},
                {legacy ? "ttl" : "ttlMs", t.ttl_ms > 0 ? json(t.ttl_ms) : json(nullptr)},
                {legacy ? "pollInterval" : "pollIntervalMs", t.poll_ms}};
    if (!t.status_message.empty()) out["statusMessage"] = t.status_message;
    return out;
}
json legacy_task_json(const TaskRecord& t) { return task_json(t, true); }
json modern_task_json(const TaskRecord& t) { return task_json(t, false); }

bool has_tasks_extension(const json& caps) {
    if (!caps.is_object()) return false;
    auto ext = caps.find("extensions");
    return ext != caps.end() && ext->is_object() && ext->contains(kTasksExtension);
}

json tasks_requirement() {
    return {{"extensions", {{std::string(kTasksExtension), json::object()}}}};
}

// Whom a task is bound to, in both eras. With an authorization context (an API key, an OAuth
// token) the caller itself: any session of it, on any instance sharing the store, reaches the
// task (2025-11-25: "When an authorization context is provided, receivers MUST bind tasks to
// said context"). Without one, a legacy HTTP task is bound to its session; stdio's caller is
// the process's own user; a 2026-07-28 call without auth has no session, so the task id (128
// random bits) is all that guards its task.
std::string task_owner(const RequestContext& ctx) {
    if (!ctx.principal.authenticated && ctx.era == Era::legacy && ctx.session &&
        !ctx.session->id.empty())
        return ctx.principal.name + "#" + ctx.session->id;
    return ctx.principal.name;
}

std::string_view era_name(Era era) { return era == Era::legacy ? "legacy" : "modern"; }

RpcError unknown_task(const std::string& id) {
    return RpcError(error_code::invalid_params,
                    "unknown task: " + id + " (it expired, or was never created for this caller)");
}

bool wants_task(const ToolDef& tool, const json& params, const RequestContext& ctx) {
    if (tool.task_support == TaskSupport::forbidden) return false;
    if (ctx.era == Era::legacy) {
        auto t = params.find("task");
        return t != params.end() && t->is_object();
    }
    return has_tasks_extension(ctx.client_capabilities);
}

void require_task_support_fits(const ToolDef& tool, const json& params,
                               const RequestContext& ctx) {
    if (ctx.era == Era::legacy && tool.task_support == TaskSupport::forbidden) {
        auto t = params.find("task");
        if (t != params.end() && !t->is_null())
            throw RpcError(error_code::method_not_found,
                           "the tool " + tool.name +
                               " cannot run as a task (its execution.taskSupport is forbidden); "
                               "call it without params.task");
    }
    if (tool.task_support != TaskSupport::required || wants_task(tool, params, ctx)) return;
    if (ctx.era == Era::modern)
        throw RpcError(error_code::missing_client_capability,
                       "the tool " + tool.name + " runs only as a task: declare the " +
                           std::string(kTasksExtension) + " extension in clientCapabilities",
                       {{"requiredCapabilities", tasks_requirement()}});
    throw RpcError(error_code::method_not_found,
                   "the tool " + tool.name +
                       " runs only as a task: send params.task (the server declares "
                       "capabilities.tasks.requests.tools.call)");
}

std::string RequestContext::task_id() const {
    if (!task_) return {};
    std::lock_guard lock(task_->mutex);
    return task_->record.id;
}

void RequestContext::set_task_resume(json resume) const {
    if (!task_ || !server_) return;
    TaskRecord copy;
    {
        std::lock_guard lock(task_->mutex);
        task_->record.resume = std::move(resume);
        copy = task_->record;
    }
    task_->store->put(copy);
}

// Saves the record and tells a legacy client with a notification path about the change.
void publish(LiveTask& task) {
    TaskRecord copy;
    bool entered = false;  // a status it was not in when last published
    {
        std::lock_guard lock(task.mutex);
        task.record.updated_ms = task.clock->unix_ms();
        copy = task.record;
        entered = std::exchange(task.counted, copy.status) != copy.status;
    }
    if (entered) count_task_status(copy.status);
    task.changed.notify_all();
    task.store->put(copy);
    if (copy.era == "legacy" && task.session && task.session->notify && task.session->initialized)
        task.session->notify(dump({{"jsonrpc", "2.0"},
                                   {"method", "notifications/tasks/status"},
                                   {"params", legacy_task_json(copy)}}));
}


void task_set_status(LiveTask& task, TaskStatus status, std::string message,
                     json input_requests) {
    {
        std::lock_guard lock(task.mutex);
        if (is_terminal(task.record.status)) return;
        task.record.status = status;
        task.record.status_message = std::move(message);
        task.record.input_requests = std::move(input_requests);
    }
    publish(task);
}

void task_progress(LiveTask& task, std::string message) {
    {
        std::lock_guard lock(task.mutex);
        if (is_terminal(task.record.status) || task.record.status_message == message) return;
        task.record.status_message = std::move(message);
    }
    publish(task);
}

// Only the open questions stay on the record once some are answered. Called with the task's
// mutex held.
void narrow_input_requests(LiveTask& task, json left) {
    if (left.size() == task.record.input_requests.size()) return;
    task.record.input_requests = std::move(left);
    task.record.updated_ms = task.clock->unix_ms();
    task.store->put(task.record);
}

// Modern: waits for tasks/update to deliver every answer in `questions`.
json task_wait_for_answers(LiveTask& task, const json& questions,
                           std::chrono::milliseconds timeout,
                           const std::function<bool(const std::string&, const json&)>& fits) {
    task_set_status(task, TaskStatus::input_required, "waiting for the client's answer",
                    questions);
    json answers = json::object();
    {
        std::unique_lock lock(task.mutex);
        auto stop = task.stop.get_token();
        auto deadline = std::chrono::steady_clock::now() + timeout;
        auto unanswered = [&] {
            json left = json::object();
            for (const auto& [key, q] : questions.items()) {
                auto it = task.responses.find(key);
                if (it == task.responses.end() || !fits(q.value("method", ""), *it)) left[key] = q;
            }
            return left;
        };
        task.open_questions = unanswered;
        // Unset on every way out (answered, cancelled, timed out), still under the lock.
        struct Unset {
            LiveTask& task;
            ~Unset() { task.open_questions = nullptr; }
        } unset{task};
        for (json left = unanswered(); !left.empty(); left = unanswered()) {
            if (stop.stop_requested()) throw RpcError(error_code::internal_error, "cancelled");
            narrow_input_requests(task, std::move(left));
            if (task.changed.wait_until(lock, deadline) == std::cv_status::timeout &&
                !unanswered().empty())
                throw std::runtime_error("the client did not answer in time");
        }
        for (const auto& [key, q] : questions.items()) answers[key] = task.responses[key];
    }
    task_set_status(task, TaskStatus::working, "", nullptr);
    return answers;
}

std::string Server::start_task(const ToolDef& tool, const json& id, const json& arguments,
                               const json& params, RequestContext& ctx) {
    auto& impl = *impl_;
    const bool legacy = ctx.era == Era::legacy;
    std::int64_t now = impl.now_ms();
    impl.tasks.store->erase_expired(now);

    std::int64_t ttl = impl.options.task_ttl_ms;
    if (legacy) {
        const json& t = params["task"];
        // Compared as a double first: 1e300 converted to an integer is undefined (it came out
        // as null and escaped the cap).
        if (auto it = t.find("ttl"); it != t.end() && it->is_number() && it->get<double>() > 0)
            ttl = it->get<double>() >= static_cast<double>(impl.options.task_max_ttl_ms)
                      ? impl.options.task_max_ttl_ms
                      : std::max<std::int64_t>(1, static_cast<std::int64_t>(it->get<double>()));
    }
    auto task = std::make_shared<LiveTask>();
    task->store = impl.tasks.store;
    task->clock = impl.clock;
    task->principal = ctx.principal.name;
    {
        std::lock_guard lock(impl.tasks.mutex);
        admit_task(impl.tasks.live, ctx.principal.name, impl.options);
        TaskRecord& r = task->record;
        r.id = crypto::random_hex(16);
        r.owner = task_owner(ctx);
        r.tool = tool.name;
        r.era = legacy ? "legacy" : "modern";
        r.created_ms = r.updated_ms = now;
        r.ttl_ms = ttl;
        r.poll_ms = impl.options.task_poll_ms;
        r.arguments = arguments;
        if (impl.tasks.store->shared()) {
            r.lease_owner = impl.tasks.instance_id;
            r.lease_until_ms = now + impl.options.task_lease_ms;
        }
        impl.tasks.live[r.id] = task;
    }
    task->session = ctx.session;
    impl.tasks.store->put(task->record);
    count_task_status(task->record.status);
    TaskRecord created = task->record;
    launch_task(task, &tool, ctx, false);

    json result;
    if (legacy) {
        result = {{"task", legacy_task_json(created)}};
    } else {
        result = modern_task_json(created);
        result["resultType"] = "task";
        impl.add_server_info(result["_meta"]);
    }
    return dump({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::launch_task(std::shared_ptr<LiveTask> task, const ToolDef* tool, RequestContext ctx,
                         bool resumed) {
    task->channel = std::make_unique<TaskChannel>(*task);
    ctx.server_ = this;
    ctx.channel_ = task->channel.get();
    ctx.stop = task->stop.get_token();
    ctx.task_ = task;
    ctx.request_id = nullptr;
    auto& impl = *impl_;
    std::unique_lock lock(impl.tasks.mutex);
    // Join the threads of tasks that have finished.
    std::erase_if(impl.tasks.threads, [](auto& entry) {
        if (!entry.first->finished) return false;
        if (entry.second.joinable()) entry.second.join();
        return true;
    });
    std::erase_if(impl.tasks.live, [](const auto& entry) { return entry.second->finished.load(); });
    const ServerOptions* options = &impl.options;
    // The work runs on after its request: its log lines and gateway requests keep the trace.
    auto trace = trace_for_work(tool->name, ctx.principal.name);
    auto work = [task, tool, ctx = std::move(ctx), resumed, options,
                 trace = std::move(trace)]() mutable {
        const base::CallTraceScope traced(std::move(trace));
        count_task_running(1);
        struct Ended {
            ~Ended() { count_task_running(-1); }
        } ended;
        ToolResult result;
        std::optional<RpcError> failure;
        // How the work below goes (the gateway's retries) becomes the task's statusMessage,
        // and progress when the call carried a token.
        const base::ProgressNotes::Listener listener = [&ctx, step = 0.0](
                                                           std::string_view note) mutable {
            ctx.progress(++step, std::nullopt, note);
        };
        const base::ProgressNotes::Scope notes(listener);
        try {
            const json& args = task->record.arguments;
            if (resumed)
                result = tool->resume_task(task->record.resume, args, ctx);
            else
                result = tool->task_handler ? tool->task_handler(args, ctx)
                                            : tool->handler(args, ctx);
        } catch (const RpcError& e) {
            failure = e;
        } catch (const InputRequired&) {
            failure = RpcError(error_code::internal_error,
                               "the tool asked for input in a way tasks cannot carry");
        } catch (const std::exception& e) {
            log::error("task {} ({}) failed: {}", task->record.id, tool->name, e.what());
            result = ToolResult::text(
                "the tool " + tool->name + " failed unexpectedly; see the server log", true);
        }
        if (task->shutting_down) {
            // Stopped by a shutdown, not by the client: the stored record stays as it was, so
            // the next start resumes the task (or says its outcome is unknown).
            task->finished = true;
            task->changed.notify_all();
            return;
        }
        {
            std::lock_guard task_lock(task->mutex);
            TaskRecord& r = task->record;
            if (!is_terminal(r.status)) {
                r.input_requests = nullptr;
                if (failure) {
                    r.status = TaskStatus::failed;
                    r.error = {{"code", failure->code()}, {"message", failure->what()}};
                    r.status_message = failure->what();
                } else {
                    // 2025-11-25 calls a tool error a failed task; 2026-07-28 a completed one
                    // whose result says isError. Either way the result is kept.
                    const bool legacy_failure = r.era == "legacy" && result.is_error;
                    r.status = legacy_failure ? TaskStatus::failed : TaskStatus::completed;
                    summarize_structured_text(
                        result, *options, r.era == "legacy" ? Era::legacy : Era::modern);
                    add_result_meta(result.meta, *options);
                    r.result = "{";
                    append_tool_result_fields(r.result, result);
                    if (result.meta.is_object() && !result.meta.empty())
                        r.result += R"(,"_meta":)" + dump(result.meta);
                    r.result += "}";
                    r.status_message = legacy_failure ? "the tool reported an error" : "";
                }
            }
        }
        publish(*task);
        task->finished = true;
        task->changed.notify_all();
    };
    try {
        impl.tasks.threads.emplace_back(task, std::jthread(std::move(work)));
        return;
    } catch (const std::system_error& e) {
        // At the process's thread limit: the task is refused, its record does not stay
        // "working", and the process goes on.
        impl.tasks.live.erase(task->record.id);
        lock.unlock();
        log::warn("task {} ({}): no thread for it: {}", task->record.id, tool->name, e.what());
        RpcError refusal = task_thread_refusal(e);
        {
            std::lock_guard task_lock(task->mutex);
            task->record.status = TaskStatus::failed;
            task->record.error = {{"code", refusal.code()}, {"message", refusal.what()}};
            task->record.status_message = refusal.what();
        }
        publish(*task);
        task->finished = true;
        throw refusal;
    }
}

}  // namespace agency::mcp
