// Legacy tasks/result: waits for the task's end, relaying to the client what its work sends
// on the way (questions, progress), then answers with its result or error.
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

std::optional<std::string> Methods::tasks_result(Server& server, const Request& r) {
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
    return make_error_text(r.id, code, message, related);
}

}  // namespace agency::mcp
