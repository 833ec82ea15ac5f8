// Tasks that outlive their process: resumed after a restart, and, when several instances share
// the store, held under a lease that this process renews. A task whose instance died (its
// lease ran out) is claimed by another instance and resumed or failed with "outcome unknown";
// a tasks/cancel answered by any instance reaches the one doing the work (at once through the
// store's watch, at the latest with the next renewal).
#include <mutex>

#include "base/log.hpp"

#include "server/server_impl.hpp"

namespace agency::mcp {

void Server::resume_task(TaskRecord r) {
    auto& impl = *impl_;
    const ToolDef* tool = impl.find_tool(r.tool);
    auto task = std::make_shared<LiveTask>();
    task->store = impl.tasks.store;
    task->clock = impl.clock;
    task->record = std::move(r);
    if (!tool || !tool->resume_task || task->record.resume.is_null()) {
        task->record.status = TaskStatus::failed;
        task->record.error = {
            {"code", error_code::internal_error},
            {"message", "the server running this task restarted or stopped before it ended, "
                        "so how it ended is unknown; check the result with the read tools "
                        "before running it again"}};
        task->record.status_message = task->record.error["message"];
        task->record.updated_ms = impl.now_ms();
        impl.tasks.store->put(task->record);
        return;
    }
    log::info("resuming task {} ({})", task->record.id, task->record.tool);
    {
        std::lock_guard lock(impl.tasks.mutex);
        impl.tasks.live[task->record.id] = task;
    }
    RequestContext ctx;
    const bool modern = task->record.era == "modern";
    ctx.era = modern ? Era::modern : Era::legacy;
    ctx.protocol_version =
        modern ? std::string(kModernVersion) : std::string(kLatestLegacyVersion);
    // The caller the work runs for: a session-bound owner is "<principal>#<session id>" (a
    // session id holds no '#'); a key's or a token's caller is the owner itself.
    const std::string& owner = task->record.owner;
    const bool authenticated = owner.starts_with("key:") || owner.starts_with("oauth:");
    ctx.principal.name = authenticated ? owner : owner.substr(0, owner.rfind('#'));
    ctx.principal.authenticated = authenticated;
    task->principal = ctx.principal.name;
    try {
        launch_task(task, tool, ctx, true);
    } catch (const RpcError& e) {
        // No thread for it now: its record says so (failed), the process goes on.
        log::warn("task {} could not be resumed: {}", task->record.id, e.what());
    }
}

void Server::resume_tasks() {
    auto& impl = *impl_;
    if (!impl.tasks.store->shared()) {
        // The only instance: whatever was left unfinished was this server's.
        for (TaskRecord& r : impl.tasks.store->unfinished()) resume_task(std::move(r));
        return;
    }
    impl.tasks.store->watch_task_cancellations([this](const std::string& id) { cancel_here(id); });
    impl.tasks.keeper =
        base::Periodic({.period = std::chrono::milliseconds(impl.options.task_lease_ms / 3),
                        .what = "tasks: renewing leases",
                        .clock = impl.clock},
                       [this](std::stop_token) { keep_task_leases(); });
}

void Server::keep_task_leases() {
    auto& impl = *impl_;
    for (const std::string& id :
         impl.tasks.store->renew_task_leases(impl.tasks.instance_id, impl.options.task_lease_ms))
        cancel_here(id);
    for (TaskRecord& orphan : impl.tasks.store->orphaned_tasks(16)) {
        {
            std::lock_guard lock(impl.tasks.mutex);
            if (impl.tasks.live.contains(orphan.id))
                continue;  // ours; its renewal comes next round
        }
        auto claimed = impl.tasks.store->claim_task(orphan.id, impl.tasks.instance_id,
                                                    impl.options.task_lease_ms, false);
        if (!claimed) continue;  // another instance was quicker
        log::warn("task {} ({}): its instance stopped renewing its lease; taking it over",
                  claimed->id, claimed->tool);
        resume_task(std::move(*claimed));
    }
}

void Server::cancel_here(const std::string& task_id) {
    std::shared_ptr<LiveTask> live;
    {
        std::lock_guard lock(impl_->tasks.mutex);
        auto it = impl_->tasks.live.find(task_id);
        if (it == impl_->tasks.live.end()) return;
        live = it->second;
    }
    // The cancelling instance already ran the tool's on_cancel; here the work stops.
    task_set_status(*live, TaskStatus::cancelled, "cancelled by the client", nullptr);
    live->stop.request_stop();
    live->changed.notify_all();
    log::info("task {} cancelled on another instance; its work here stops", task_id);
}

}  // namespace agency::mcp
