#include "tools/jobs.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace agency::tools {

using json = nlohmann::json;

// --- credits ---------------------------------------------------------------------------------

CreditLimiter::CreditLimiter(CreditSettings settings) : settings_(settings) {}

CreditLimiter::Permit::~Permit() {
    if (owner_) owner_->release(client_id_);
}

std::variant<CreditLimiter::Permit, CreditLimiter::Refusal> CreditLimiter::try_acquire(
    const std::string& client_id) {
    using clock = std::chrono::steady_clock;
    const auto now = clock::now();
    std::lock_guard lock(mutex_);
    PerClient& c = clients_[client_id];
    while (!c.started.empty() && now - c.started.front() >= std::chrono::minutes(1))
        c.started.pop_front();
    if (c.in_flight >= settings_.max_in_flight_per_client) {
        return Refusal{"client " + client_id + " already has " + std::to_string(c.in_flight) +
                           " generation actions running (at most " +
                           std::to_string(settings_.max_in_flight_per_client) +
                           " at once); wait for them to finish, then retry",
                       5};
    }
    if (static_cast<int>(c.started.size()) >= settings_.max_per_minute_per_client) {
        const auto wait = std::chrono::duration_cast<std::chrono::seconds>(
            c.started.front() + std::chrono::minutes(1) - now);
        return Refusal{"client " + client_id + " reached its cap of " +
                           std::to_string(settings_.max_per_minute_per_client) +
                           " generation actions per minute; generation spends credits, so "
                           "retry after the wait rather than in a loop",
                       static_cast<int>(std::max<std::int64_t>(1, wait.count() + 1))};
    }
    ++c.in_flight;
    c.started.push_back(now);
    return Permit(this, client_id);
}

void CreditLimiter::release(const std::string& client_id) {
    std::lock_guard lock(mutex_);
    auto it = clients_.find(client_id);
    if (it != clients_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

// --- audit jobs ------------------------------------------------------------------------------

AuditJobs::AuditJobs(std::shared_ptr<Store> store, int workers)
    : store_(std::move(store)), worker_count_(std::max(1, workers)) {}

AuditJobs::~AuditJobs() { stop(); }

void AuditJobs::start(std::shared_ptr<Toolbox> box) {
    std::lock_guard lock(mutex_);
    if (!workers_.empty()) return;
    box_ = std::move(box);
    for (const Job& job : store_->unfinished_jobs()) {
        if (job.kind != "seo_audit") continue;
        spdlog::warn("audit job {} ({} {}) was left {} by a previous run; running it again "
                     "(seo_audit is retry-safe)",
                     job.id, job.client_id, job.args.value("url", ""), job.status);
        queue_.push_back(job.id);
    }
    for (int i = 0; i < worker_count_; ++i)
        workers_.emplace_back([this](std::stop_token stop) { work(stop); });
}

void AuditJobs::stop() {
    std::vector<std::jthread> workers;
    {
        std::lock_guard lock(mutex_);
        workers.swap(workers_);
    }
    for (auto& w : workers) w.request_stop();
    ready_.notify_all();
    workers.clear();  // joins
    // Nothing runs any more: let go of the gateway client, whose connections its owner may be
    // about to close.
    std::lock_guard lock(mutex_);
    box_.reset();
}

Job AuditJobs::submit(const std::string& client_id, const std::string& principal,
                      const std::string& url) {
    Job job = store_->create_job("seo_audit", client_id, principal, {{"url", url}});
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(job.id);
    }
    ready_.notify_one();
    return job;
}

std::optional<Job> AuditJobs::find(const std::string& id) { return store_->job(id); }

bool AuditJobs::cancel(const std::string& id) {
    const auto before = store_->cancel_job(id);
    if (!before) return false;
    // A queued id may still sit in queue_: the worker's mark_running refuses a cancelled job.
    if (*before == "running")
        spdlog::warn("audit job {} cancelled while running: its POST is already out, so the "
                     "audit may still complete at the gateway (the result is kept)",
                     id);
    else
        spdlog::info("audit job {} cancelled before it was sent", id);
    changed(id);
    return true;
}

void AuditJobs::on_change(Listener listener) {
    std::lock_guard lock(listener_mutex_);
    if (listener)
        listener_ = std::make_shared<const Listener>(std::move(listener));
    else
        listener_.reset();
}

void AuditJobs::changed(const std::string& id) {
    std::shared_ptr<const Listener> listener;
    {
        std::lock_guard lock(listener_mutex_);
        listener = listener_;
    }
    if (!listener) return;
    auto job = store_->job(id);
    if (!job) return;
    try {
        (*listener)(*job);
    } catch (const std::exception& e) {
        // A listener's failure is its own; the job's state is already stored.
        spdlog::error("audit job {}: change listener failed: {}", id, e.what());
    }
}

void AuditJobs::work(std::stop_token stop) {
    while (!stop.stop_requested()) {
        std::string id;
        {
            std::unique_lock lock(mutex_);
            if (!ready_.wait(lock, stop, [this] { return !queue_.empty(); })) return;
            id = std::move(queue_.front());
            queue_.pop_front();
        }
        try {
            run_one(id, stop);
        } catch (const std::exception& e) {
            // A store failure must not kill the worker; the job stays unfinished for the next
            // start to retry.
            spdlog::error("audit job {}: {}", id, e.what());
        }
    }
}

void AuditJobs::run_one(const std::string& id, std::stop_token stop) {
    auto job = store_->job(id);
    if (!job || !store_->mark_running(id)) return;  // finished or cancelled meanwhile
    changed(id);
    const std::string url = job->args.value("url", "");
    try {
        const gateway::ActionResult r =
            box_->gateway().act("seo_audit", job->client_id, {{"url", url}}, stop);
        json result = {{"report_id", r.data.value("id", "")}, {"url", r.data.value("url", url)}};
        for (const char* field : {"score", "issues_found", "issue_counts", "share_url"})
            if (r.data.contains(field)) result[field] = r.data[field];
        store_->finish_job(id, true, result, nullptr);
        changed(id);
        spdlog::info("audit job {} succeeded: report {}", id,
                     result["report_id"].get<std::string>());
    } catch (const gateway::Error& e) {
        if (e.reason() == gateway::ErrorReason::cancelled) return;  // shutting down: next start
        json error = {{"reason", std::string(gateway::to_string(e.reason()))},
                      {"message", e.what()}};
        if (!e.gateway_error().empty()) error["gateway_error"] = e.gateway_error();
        if (e.http_status()) error["http_status"] = e.http_status();
        if (e.status_code()) error["status_code"] = *e.status_code();
        store_->finish_job(id, false, nullptr, error);
        changed(id);
        spdlog::warn("audit job {} failed: {}", id, e.what());
    }
}

}  // namespace agency::tools
