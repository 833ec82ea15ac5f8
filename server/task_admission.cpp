// Which tasks may start: every running task holds a thread, so their number is bounded per
// caller (principal, across all its sessions) and in all, and when the server fills up the
// caller holding the most gives way first (docs/security.md, "Limits").
//
// The policy, in order:
//   1. a caller holding max_live_tasks_per_caller tasks is refused;
//   2. with max_live_tasks running, everyone is refused (a running task is never stopped to
//      make room);
//   3. past three quarters of max_live_tasks (the reserve), a caller is refused unless another
//      caller holds more than it does. One caller alone thus stops at three quarters, and the
//      last quarter goes to callers holding less than the one holding the most.
#include <algorithm>
#include <system_error>
#include <unordered_map>

#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

std::string tasks_text(std::size_t n) {
    return std::to_string(n) + (n == 1 ? " task" : " tasks");
}

}  // namespace

void admit_task(const std::unordered_map<std::string, std::shared_ptr<LiveTask>>& tasks,
                const std::string& principal, const ServerOptions& options) {
    std::unordered_map<std::string_view, std::size_t> held;
    std::size_t total = 0;
    for (const auto& [id, t] : tasks) {
        if (t->finished) continue;
        ++held[t->principal];
        ++total;
    }
    const std::size_t mine = held.contains(principal) ? held[principal] : 0;
    const std::size_t cap = std::max<std::size_t>(1, options.max_live_tasks);
    if (mine >= options.max_live_tasks_per_caller)
        throw RpcError(error_code::invalid_request,
                       "too many tasks running for this caller (" + tasks_text(mine) +
                           ", at most " + std::to_string(options.max_live_tasks_per_caller) +
                           " per caller across its sessions): wait for one to finish or "
                           "cancel one (tasks/cancel)");
    if (total >= cap)
        throw RpcError(error_code::invalid_request,
                       "server busy: " + tasks_text(total) + " running, the most this server "
                       "runs at once (--max-tasks " + std::to_string(cap) +
                           "); try again when one has finished");
    const std::size_t reserve_from = cap - cap / 4;
    if (total < reserve_from) return;
    std::size_t most_other = 0;
    for (const auto& [who, n] : held)
        if (who != principal) most_other = std::max(most_other, n);
    if (mine >= most_other)
        throw RpcError(error_code::invalid_request,
                       "server busy: " + tasks_text(total) + " of " + std::to_string(cap) +
                           " running, and this caller holds the most (" + tasks_text(mine) +
                           "); the rest is kept for callers holding fewer. Try again when one "
                           "of yours has finished");
}

RpcError task_thread_refusal(const std::exception& e) {
    return RpcError(error_code::invalid_request,
                    std::string("server busy: no thread could be started for the task (") +
                        e.what() + "); nothing was started, try again later");
}

}  // namespace agency::mcp
