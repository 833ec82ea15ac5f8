// cpp-httplib's connection pool on a WorkQueue: a connection thread starts when a connection
// finds none idle, up to the same cap. httplib's own ThreadPool starts all of them before the
// first accept (64 for MCP over HTTP), which was most of the cold start's extra cost over stdio.
#pragma once

#include <functional>
#include <memory>

#include <httplib.h>

#include "server/work_queue.hpp"

namespace agency::mcp {

class LazyTaskQueue final : public httplib::TaskQueue {
public:
    explicit LazyTaskQueue(std::size_t max_threads)
        : queue_(std::make_unique<WorkQueue>(max_threads)) {}
    void enqueue(std::function<void()> fn) override { queue_->post(std::move(fn)); }
    // As httplib's pool: queued connections are served, then the threads are joined.
    void shutdown() override { queue_.reset(); }

private:
    std::unique_ptr<WorkQueue> queue_;
};

}  // namespace agency::mcp
