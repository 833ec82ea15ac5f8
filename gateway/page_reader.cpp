#include "gateway/page_reader.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "base/trace_context.hpp"

namespace agency::gateway {

// One thread per page in flight ahead (not per page read: thread start-up would cost more
// than a page's walk), holding at most one page.
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

    Worker(Client& client, const ReadQuery& query, std::stop_token call_stop,
           std::optional<SteadyTime> deadline, std::chrono::milliseconds budget)
        : follow_call(call_stop, std::function<void()>([this] { cancel.request_stop(); })),
          // Reads ahead for the call on this thread: its requests carry the call's trace, and
          // stay inside the call's deadline (a page read ahead is part of the same scan).
          thread([this, &client, query, deadline, budget,
                  trace = base::shared_call_trace()](std::stop_token quit) {
              const base::CallTraceScope traced(trace);
              std::optional<DeadlineScope> within;
              if (deadline) within.emplace(client.clock(), *deadline, budget);
              run(client, query, quit);
          }) {}

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

    // The offset posted and not yet taken.
    std::optional<std::int64_t> holding() {
        std::lock_guard lock(mu);
        return taken;
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

    // The page posted (waited for); its failure is rethrown. The worker is idle again.
    Page take() {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return ready; });
        taken.reset();
        ready = false;
        if (error) std::rethrow_exception(std::exchange(error, nullptr));
        return std::move(page);
    }

    // Waits for the page posted and throws it away (a wrong guess).
    void drop() {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return ready; });
        taken.reset();
        ready = false;
        error = nullptr;
        page = Page{};
    }
};

namespace {
// Readers alive now, across all calls: with more long scans than cores the cores are already
// busy, and reading ahead would only add a thread and two switches per page.
std::atomic<unsigned> g_readers{0};
const unsigned g_ahead_limit = std::max(2u, std::thread::hardware_concurrency());
}  // namespace

std::string_view rows_begin(std::string_view body) {
    const std::size_t data = body.find("\"data\"");
    if (data == std::string_view::npos) return {};
    std::string_view rows = body.substr(data, 512);
    return rows.substr(0, rows.find("\"pagination\""));
}

PageReader::PageReader(Client& client, ReadQuery query, std::stop_token stop)
    : client_(client), query_(std::move(query)), stop_(std::move(stop)) {
    if (const DeadlineScope* scope = DeadlineScope::current()) {
        deadline_ = scope->deadline();
        budget_ = scope->budget();
    }
    ++g_readers;
}

PageReader::~PageReader() {
    workers_.clear();
    --g_readers;
}

Page PageReader::read(std::int64_t offset, std::optional<std::int64_t> total) {
    std::optional<Page> page;
    for (auto& w : workers_) {
        const auto held = w->holding();
        if (held && *held == offset) page = w->take();  // rethrows its failure
    }
    // Which pages to have in flight next; any other held page is a wrong guess, dropped.
    const std::int64_t step = query_.limit.value_or(1000);
    std::vector<std::int64_t> wanted;
    const bool ahead_ok = !workers_.empty() || g_readers.load(std::memory_order_relaxed) <= g_ahead_limit;
    if (total && ahead_ok)
        for (int k = 1; k <= kAhead && offset + k * step < *total; ++k) wanted.push_back(offset + k * step);
    for (auto& w : workers_) {
        const auto held = w->holding();
        if (held && std::find(wanted.begin(), wanted.end(), *held) == wanted.end())
            w->drop();
        else if (held)
            std::erase(wanted, *held);
    }
    for (const std::int64_t next : wanted) {
        Worker* idle = nullptr;
        for (auto& w : workers_)
            if (!w->holding()) idle = w.get();
        if (idle == nullptr && workers_.size() < kAhead) {
            workers_.push_back(std::make_unique<Worker>(client_, query_, stop_, deadline_, budget_));
            idle = workers_.back().get();
        }
        if (idle != nullptr) idle->post(next);
    }
    if (page) return std::move(*page);
    ReadQuery query = query_;
    query.offset = offset;
    return client_.read_body(query, stop_);
}

}  // namespace agency::gateway
