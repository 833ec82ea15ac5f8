// The task methods, as the caller meets them: tasks/list, tasks/get, tasks/cancel, tasks/update
// (2026-07-28's answers to input_required) and legacy tasks/result, which waits for the task's
// end, relaying to the client what its work sends on the way (questions, progress), then
// answers with its result or error. Running tasks is task_runtime.cpp's.
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {
// A task another instance runs (shared store): its stored record is polled until it ends.
// False when `stop` fired first.
bool await_stored_end(TaskStore& store, const std::string& id, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    while (!stop.stop_requested()) {
        auto record = store.get(id);
        if (!record || is_terminal(record->status)) return true;
        std::unique_lock lock(m);
        cv.wait_for(lock, stop, std::chrono::milliseconds(std::clamp<std::int64_t>(
                                    record->poll_ms, 100, 1000)),
                    [] { return false; });
    }
    return false;
}
}  // namespace

std::optional<Reply> Methods::tasks_result(Server& server, const Request& r) {
    // Legacy only: waits for the end, relaying what the work sends to this call's channel.
    FoundTask task = find_task(server, r);
    if (const auto& live = task.live) {
        Channel* waiter = r.ctx.channel_;
        {
            std::unique_lock lock(live->mutex);
            if (waiter) {
                live->waiters.push_back(waiter);
                while (!live->outbox.empty()) {
                    waiter->send(live->outbox.front());
                    live->outbox.pop_front();
                }
            }
            live->changed.wait(lock, r.ctx.stop,
                               [&] { return is_terminal(live->record.status); });
            std::erase(live->waiters, waiter);
        }
        if (r.ctx.stop.stop_requested() && r.ctx.session) return std::nullopt;
    } else if (!await_stored_end(*task.store, task.id, r.ctx.stop)) {
        if (r.ctx.session) return std::nullopt;
    }
    TaskRecord record = task.current();
    if (!is_terminal(record.status))
        throw RpcError(error_code::internal_error, "the task " + task.id + " is still running");
    json related = {{std::string(kRelatedTaskMeta), {{"taskId", task.id}}}};
    if (!record.result.empty()) {
        json result = json::parse(record.result);
        result["_meta"].update(related);
        return dump({{"jsonrpc", "2.0"}, {"id", r.id}, {"result", std::move(result)}});
    }
    std::string message = record.status == TaskStatus::cancelled ? "the task was cancelled"
                                                                 : std::string("task failed");
    int code = error_code::internal_error;
    if (record.error.is_object()) {
        code = record.error.value("code", code);
        message = record.error.value("message", message);
    }
    return Reply::error(r.id, code, message, related);
}

Methods::FoundTask Methods::find_task(Server& server, const Request& r) {
    auto& impl = *server.impl_;
    if (r.ctx.era == Era::modern && !has_tasks_extension(r.ctx.client_capabilities))
        throw RpcError(error_code::missing_client_capability,
                       r.method + " needs the " + std::string(kTasksExtension) +
                           " extension in clientCapabilities",
                       {{"requiredCapabilities", tasks_requirement()}});
    FoundTask found;
    found.id = [&] {
        auto it = r.params.find("taskId");
        if (it == r.params.end() || !it->is_string())
            throw RpcError(error_code::invalid_params, "params.taskId is required (a string)");
        return it->get<std::string>();
    }();
    std::optional<TaskRecord> stored = impl.tasks.store->get(found.id);
    // A task answers in the shapes of the era that made it: the other era's methods do not
    // know it. One of a client the caller no longer reaches (its key narrowed since) is as
    // unknown as one that does not exist, whichever method reads it.
    if (!stored || stored->owner != task_owner(r.ctx) || stored->era != era_name(r.ctx.era) ||
        (stored->ttl_ms > 0 && stored->created_ms + stored->ttl_ms < impl.now_ms()) ||
        !impl.task_reached(*stored, r.ctx.principal))
        throw unknown_task(found.id);
    found.store = impl.tasks.store;
    std::lock_guard lock(impl.tasks.mutex);
    if (auto it = impl.tasks.live.find(found.id); it != impl.tasks.live.end())
        found.live = it->second;
    return found;
}

TaskRecord Methods::FoundTask::current() const {
    if (!live) return *store->get(id);
    std::lock_guard lock(live->mutex);
    return live->record;
}

std::optional<Reply> Methods::tasks_list(Server& server, const Request& r) {
    auto& impl = *server.impl_;
    const std::string owner = task_owner(r.ctx);
    // Cursors are sealed for the owner whose tasks they page through: one made up, altered or
    // issued to another caller is refused.
    const base::TokenBinding binding{.subject = "tasks/list", .principal = owner};
    std::size_t offset = 0;
    if (auto c = r.params.find("cursor"); c != r.params.end() && !c->is_null()) {
        std::optional<std::size_t> at;
        if (c->is_string()) {
            auto opened = impl.tasks_cursor_sealer->open(c->get_ref<const std::string&>(), binding);
            if (auto* token = std::get_if<base::OpenedToken>(&opened);
                token && token->body.is_object() && token->body["offset"].is_number_unsigned())
                at = token->body["offset"].get<std::size_t>();
        }
        if (!at)
            throw RpcError(error_code::invalid_params,
                           "invalid cursor: pass back the nextCursor of a previous "
                           "tasks/list, or omit it");
        offset = *at;
    }
    impl.tasks.store->erase_expired(impl.now_ms());
    constexpr std::size_t page = 50;
    auto records = impl.tasks.store->list(owner, era_name(r.ctx.era), offset, page + 1);
    json tasks = json::array();
    // Tasks of a client the caller no longer reaches are left out (a page may then be short;
    // the cursor counts stored tasks).
    for (std::size_t i = 0; i < records.size() && i < page; ++i)
        if (impl.task_reached(records[i], r.ctx.principal))
            tasks.push_back(legacy_task_json(records[i]));
    json result = {{"tasks", std::move(tasks)}};
    if (records.size() > page)
        result["nextCursor"] = impl.tasks_cursor_sealer->seal(
            binding, std::chrono::milliseconds(impl.options.task_max_ttl_ms),
            {{"offset", offset + page}});
    return complete(server, r, std::move(result));
}

std::optional<Reply> Methods::tasks_get(Server& server, const Request& r) {
    TaskRecord record = find_task(server, r).current();
    if (r.ctx.era == Era::legacy) return complete(server, r, legacy_task_json(record));
    json out = modern_task_json(record);
    if (record.status == TaskStatus::completed && !record.result.empty())
        out["result"] = json::parse(record.result);
    if (record.status == TaskStatus::failed && record.error.is_object())
        out["error"] = record.error;
    if (record.status == TaskStatus::input_required && record.input_requests.is_object())
        out["inputRequests"] = record.input_requests;
    return complete(server, r, std::move(out));
}

std::optional<Reply> Methods::tasks_cancel(Server& server, const Request& r) {
    auto& impl = *server.impl_;
    const bool legacy = r.ctx.era == Era::legacy;
    FoundTask task = find_task(server, r);
    TaskRecord record = task.current();
    if (is_terminal(record.status)) {
        if (legacy)
            throw RpcError(error_code::invalid_params,
                           "task " + task.id + " is already " +
                               std::string(to_string(record.status)) + " and cannot be cancelled");
        return complete(server, r, json::object());
    }
    const ToolDef* tool = impl.find_tool(record.tool);
    if (task.live) {
        {
            std::lock_guard lock(task.live->mutex);
            task.live->record.status = TaskStatus::cancelled;
            task.live->record.status_message = "cancelled by the client";
            task.live->record.input_requests = nullptr;
            record = task.live->record;
        }
        task.live->stop.request_stop();
        publish(*task.live);
    } else {
        record.status = TaskStatus::cancelled;
        record.status_message = "cancelled by the client";
        record.updated_ms = impl.now_ms();
        impl.tasks.store->put(record);
    }
    if (tool && tool->on_cancel && !record.resume.is_null()) {
        try {
            tool->on_cancel(record.resume);
        } catch (const std::exception& e) {
            log::warn("cancelling the work of task {}: {}", task.id, e.what());
        }
    }
    return complete(server, r, legacy ? legacy_task_json(record) : json::object());
}

std::optional<Reply> Methods::tasks_update(Server& server, const Request& r) {
    FoundTask task = find_task(server, r);
    if (r.ctx.era == Era::legacy)
        throw RpcError(error_code::method_not_found, "method not found: tasks/update");
    auto responses = r.params.find("inputResponses");
    if (responses == r.params.end() || !responses->is_object())
        throw RpcError(error_code::invalid_params,
                       "params.inputResponses is required (an object keyed like the task's "
                       "inputRequests)");
    if (!task.live && !is_terminal(task.current().status))
        throw RpcError(error_code::invalid_request,
                       "task " + task.id + " runs on another instance of this server, which "
                       "alone holds its questions: cancel it and call the tool again, or "
                       "route a task's tasks/update to the instance that created it");
    if (task.live) {
        {
            std::lock_guard lock(task.live->mutex);
            for (const auto& [k, v] : responses->items()) task.live->responses[k] = v;
            if (task.live->open_questions)
                narrow_input_requests(*task.live, task.live->open_questions());
        }
        task.live->changed.notify_all();
    }
    return complete(server, r, json::object());
}

std::optional<Reply> Methods::tasks_other(Server& server, const Request& r) {
    find_task(server, r);
    throw RpcError(error_code::method_not_found, "method not found: " + r.method);
}

}  // namespace agency::mcp
