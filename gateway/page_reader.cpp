#include "gateway/page_reader.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

namespace agency::gateway {

// One thread per scan (not per page: thread start-up would cost more than a page's walk),
// holding at most one page fetched ahead.
struct PageReader::Worker {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<std::int64_t> wanted;  // posted, not yet started
    std::optional<std::int64_t> taken;   // the offset being fetched or fetched
    bool ready = false;
    Page page;
    std::exception_ptr error;
    std::stop_source cancel;  // the reader's own: fired by its destructor or by the call's stop
    std::stop_callback<std::function<void()>> follow_call;
    std::jthread thread;

    Worker(Client& client, const ReadQuery& query, std::stop_token call_stop)
        : follow_call(call_stop, std::function<void()>([this] { cancel.request_stop(); })),
          thread([this, &client, query](std::stop_token quit) { run(client, query, quit); }) {}

    ~Worker() {
        cancel.request_stop();
        {
            std::lock_guard lock(mu);  // so the worker cannot miss the wake-up
            thread.request_stop();
        }
        cv.notify_all();
        // jthread joins: the GET in progress returns at once, cancelled.
    }

    void run(Client& client, ReadQuery query, std::stop_token quit) {
        for (;;) {
            std::int64_t offset = 0;
            {
                std::unique_lock lock(mu);
                cv.wait(lock, [&] { return wanted.has_value() || quit.stop_requested(); });
                if (quit.stop_requested()) return;
                offset = *wanted;
                wanted.reset();
            }
            query.offset = offset;
            Page fetched;
            std::exception_ptr failed;
            try {
                fetched = client.read_body(query, cancel.get_token());
            } catch (...) {
                failed = std::current_exception();
            }
            {
                std::lock_guard lock(mu);
                page = std::move(fetched);
                error = failed;
                ready = true;
            }
            cv.notify_all();
        }
    }

    void post(std::int64_t offset) {
        {
            std::lock_guard lock(mu);
            wanted = offset;
            taken = offset;
            ready = false;
        }
        cv.notify_all();
    }

    // The page posted for `offset`, or nullopt when none was (a different one is waited for
    // and dropped, so the worker is idle again).
    std::optional<Page> take(std::int64_t offset) {
        std::unique_lock lock(mu);
        if (!taken) return std::nullopt;
        cv.wait(lock, [&] { return ready; });
        const bool match = *taken == offset;
        taken.reset();
        ready = false;
        if (!match) return std::nullopt;
        if (error) std::rethrow_exception(std::exchange(error, nullptr));
        return std::move(page);
    }
};

namespace {
// Readers alive now, across all calls: with more long scans than cores the cores are already
// busy, and reading ahead would only add a thread and two switches per page.
std::atomic<unsigned> g_readers{0};
const unsigned g_ahead_limit = std::max(2u, std::thread::hardware_concurrency());
}  // namespace

PageReader::PageReader(Client& client, ReadQuery query, std::stop_token stop)
    : client_(client), query_(std::move(query)), stop_(std::move(stop)) {
    ++g_readers;
}

PageReader::~PageReader() {
    worker_.reset();
    --g_readers;
}

Page PageReader::read(std::int64_t offset, std::optional<std::int64_t> ahead) {
    std::optional<Page> page;
    if (worker_) page = worker_->take(offset);
    if (ahead && (worker_ || g_readers.load(std::memory_order_relaxed) <= g_ahead_limit)) {
        if (!worker_) worker_ = std::make_unique<Worker>(client_, query_, stop_);
        worker_->post(*ahead);
    }
    if (page) return std::move(*page);
    ReadQuery query = query_;
    query.offset = offset;
    return client_.read_body(query, stop_);
}

}  // namespace agency::gateway
