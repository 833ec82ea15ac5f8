#include "server/task_store.hpp"

#include <algorithm>
#include <chrono>
#include <array>
#include <ctime>

namespace agency::mcp {

namespace {
constexpr std::array<std::string_view, 5> kStatusNames{"working", "input_required", "completed",
                                                       "failed", "cancelled"};
}

std::string_view to_string(TaskStatus status) {
    return kStatusNames[static_cast<std::size_t>(status)];
}

std::optional<TaskStatus> parse_task_status(std::string_view text) {
    for (std::size_t i = 0; i < kStatusNames.size(); ++i)
        if (kStatusNames[i] == text) return static_cast<TaskStatus>(i);
    return std::nullopt;
}

void MemoryTaskStore::put(const TaskRecord& task) {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = tasks_.try_emplace(task.id, task);
    if (!inserted && it->second.status != TaskStatus::cancelled) it->second = task;
}

std::optional<TaskRecord> MemoryTaskStore::get(std::string_view id) {
    std::lock_guard lock(mutex_);
    auto it = tasks_.find(std::string(id));
    if (it == tasks_.end()) return std::nullopt;
    return it->second;
}

std::vector<TaskRecord> MemoryTaskStore::list(std::string_view owner, std::string_view era,
                                              std::size_t offset, std::size_t limit) {
    std::vector<TaskRecord> out;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, t] : tasks_)
            if (t.owner == owner && t.era == era) out.push_back(t);
    }
    std::sort(out.begin(), out.end(), [](const TaskRecord& a, const TaskRecord& b) {
        return a.created_ms != b.created_ms ? a.created_ms > b.created_ms : a.id < b.id;
    });
    if (offset >= out.size()) return {};
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(offset));
    if (out.size() > limit) out.resize(limit);
    return out;
}

std::vector<TaskRecord> MemoryTaskStore::unfinished() {
    std::lock_guard lock(mutex_);
    std::vector<TaskRecord> out;
    for (const auto& [id, t] : tasks_)
        if (!is_terminal(t.status)) out.push_back(t);
    return out;
}

void MemoryTaskStore::erase_expired(std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    std::erase_if(tasks_, [&](const auto& e) {
        return e.second.ttl_ms > 0 && e.second.created_ms + e.second.ttl_ms < now_ms;
    });
}

// --- one process: nothing is shared, so every unfinished task is this process's to take.

std::optional<TaskRecord> TaskStore::claim_task(std::string_view id, std::string_view,
                                                std::int64_t, bool) {
    auto task = get(id);
    if (!task || is_terminal(task->status)) return std::nullopt;
    return task;
}

std::vector<std::string> TaskStore::renew_task_leases(std::string_view, std::int64_t) {
    return {};
}

std::vector<TaskRecord> TaskStore::orphaned_tasks(std::size_t) { return {}; }

void TaskStore::watch_task_cancellations(std::function<void(const std::string&)>) {}

bool TaskStore::spend_once(std::string_view purpose, std::string_view nonce,
                           std::int64_t expires_ms) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::lock_guard lock(spent_mutex_);
    for (auto it = spent_.begin(); it != spent_.end();)
        it = it->second < now ? spent_.erase(it) : std::next(it);
    std::string id(purpose);
    id += '\n';
    id += nonce;
    return spent_.emplace(std::move(id), expires_ms).second;
}

}  // namespace agency::mcp
