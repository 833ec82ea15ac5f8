#include "tools/pipeline/jobs.hpp"

#include <algorithm>
#include <array>

#include "base/log.hpp"

#include "base/clock.hpp"
#include "base/untrusted_text.hpp"
#include "tools/kit/data_age.hpp"
#include "tools/kit/tool_metrics.hpp"

namespace agency::tools {

using json = nlohmann::json;

// --- credits ---------------------------------------------------------------------------------

CreditLimiter::CreditLimiter(CreditSettings settings, std::shared_ptr<Store> shared_store)
    : settings_(settings),
      shared_store_(shared_store && shared_store->shared() ? std::move(shared_store) : nullptr) {}

CreditLimiter::Permit::~Permit() {
    if (!owner_) return;
    if (!in_store_) {
        owner_->release(client_id_);
        return;
    }
    try {
        owner_->shared_store_->release_credit(client_id_);
    } catch (const std::exception& e) {
        // Not fatal: the slot counts as abandoned after the hold limit.
        log::warn("credits: releasing slot {}: {}", client_id_, e.what());
    }
}

namespace {
std::string in_flight_refusal(const std::string& client_id, int count, int limit) {
    return "client " + client_id + " already has " + std::to_string(count) +
           " generation actions running (at most " + std::to_string(limit) +
           " at once); wait for them to finish, then retry";
}
std::string per_minute_refusal(const std::string& client_id, int limit) {
    return "client " + client_id + " reached its cap of " + std::to_string(limit) +
           " generation actions per minute; generation spends credits, so retry after the "
           "wait rather than in a loop";
}
// A generation action runs for minutes at most; a slot held longer was left by a dead instance.
constexpr std::chrono::seconds kCreditHoldLimit{600};
}  // namespace

std::string CreditLimiter::Permit::hand_over() {
    if (!owner_ || !in_store_) return "";
    owner_ = nullptr;
    return client_id_;  // the slot's id
}

std::optional<std::variant<CreditLimiter::Permit, CreditLimiter::Refusal, IdempotencyRecord>>
CreditLimiter::try_acquire_claiming(Store& keys, const std::string& client_id,
                                    const KeyClaim& claim) {
    if (!shared_store_ || shared_store_.get() != &keys) return std::nullopt;
    auto got = shared_store_->claim_idempotency_with_credit(
        claim.principal, claim.tool, claim.key, claim.digest, claim.stale_after,
        {.client_id = client_id,
         .max_in_flight = settings_.max_in_flight_per_client,
         .max_per_minute = settings_.max_per_minute_per_client,
         .hold_limit = kCreditHoldLimit});
    if (got.known) return std::move(*got.known);
    auto permit = from_slot(client_id, got.slot);
    if (auto* p = std::get_if<Permit>(&permit)) return std::move(*p);
    return std::move(std::get<Refusal>(permit));
}

std::variant<CreditLimiter::Permit, CreditLimiter::Refusal> CreditLimiter::try_acquire_shared(
    const std::string& client_id) {
    return from_slot(client_id, shared_store_->acquire_credit(
                                    client_id, settings_.max_in_flight_per_client,
                                    settings_.max_per_minute_per_client, kCreditHoldLimit));
}

std::variant<CreditLimiter::Permit, CreditLimiter::Refusal> CreditLimiter::from_slot(
    const std::string& client_id, const CreditSlot& slot) {
    if (slot.granted) return Permit(this, slot.id, true);
    if (slot.why == "in_flight")
        return Refusal{in_flight_refusal(client_id, settings_.max_in_flight_per_client,
                                         settings_.max_in_flight_per_client),
                       slot.retry_after_s};
    return Refusal{per_minute_refusal(client_id, settings_.max_per_minute_per_client),
                   slot.retry_after_s};
}

std::variant<CreditLimiter::Permit, CreditLimiter::Refusal> CreditLimiter::try_acquire(
    const std::string& client_id) {
    if (shared_store_) return try_acquire_shared(client_id);
    using clock = std::chrono::steady_clock;
    const auto now = clock::now();
    std::lock_guard lock(mutex_);
    PerClient& c = clients_[client_id];
    while (!c.started.empty() && now - c.started.front() >= std::chrono::minutes(1))
        c.started.pop_front();
    if (c.in_flight >= settings_.max_in_flight_per_client) {
        return Refusal{
            in_flight_refusal(client_id, c.in_flight, settings_.max_in_flight_per_client), 5};
    }
    if (static_cast<int>(c.started.size()) >= settings_.max_per_minute_per_client) {
        const auto wait = std::chrono::duration_cast<std::chrono::seconds>(
            c.started.front() + std::chrono::minutes(1) - now);
        return Refusal{per_minute_refusal(client_id, settings_.max_per_minute_per_client),
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

AuditJobs::AuditJobs(std::shared_ptr<Store> store, int workers, Sharing sharing)
    : store_(std::move(store)), worker_count_(std::max(1, workers)), sharing_(std::move(sharing)) {}

AuditJobs::~AuditJobs() { stop(); }

void AuditJobs::start(std::shared_ptr<Toolbox> box) {
    std::lock_guard lock(mutex_);
    if (started_) return;
    started_ = true;
    box_ = std::move(box);
    if (store_->shared()) {
        // Other instances may be running these: only jobs whose lease ran out are taken, now
        // and every lease / 3 from here on.
        keeper_ = base::Periodic({.period = sharing_.lease / 3,
                                  .what = "audit jobs: renewing leases",
                                  .clock = sharing_.clock},
                                 [this](std::stop_token) { keep_leases(); });
    } else {
        for (const Job& job : store_->unfinished_jobs()) {
            if (job.kind != "seo_audit") continue;
            log::warn("audit job {} ({} {}) was left {} by a previous run; {}", job.id,
                      job.client_id, job.args.value("url", ""), job.status,
                      job.status == "running"
                          ? "looking for its report at the gateway before re-sending"
                          : "running it (it was never sent)");
            queue_.push_back({job.id, true});
        }
    }
    // The workers start with the first job (here, or in submit): most runs audit nothing, and
    // idle threads made at start-up only delay the first answer.
    if (!queue_.empty()) start_workers();
}

void AuditJobs::start_workers() {
    for (int i = 0; i < worker_count_; ++i)
        workers_.emplace_back([this](std::stop_token stop) { work(stop); });
}

void AuditJobs::keep_leases() {
    store_->renew_job_leases(sharing_.instance_id, sharing_.lease);
    take_orphans();
}

void AuditJobs::take_orphans() {
    std::vector<Job> orphans = store_->orphaned_jobs(16);
    if (orphans.empty()) return;
    std::lock_guard lock(mutex_);
    for (const Job& job : orphans) {
        if (job.kind != "seo_audit") continue;
        if (std::any_of(queue_.begin(), queue_.end(),
                        [&](const Pending& p) { return p.id == job.id; }))
            continue;
        if (job.status == "running")
            log::warn(
                "audit job {} ({}): the instance running it stopped renewing its "
                "lease; taking it over",
                job.id, job.client_id);
        queue_.push_back({job.id, false});
    }
    if (started_ && workers_.empty()) start_workers();
    ready_.notify_all();
}

void AuditJobs::stop() {
    std::vector<std::jthread> workers;
    base::Periodic keeper;
    {
        std::lock_guard lock(mutex_);
        started_ = false;
        workers.swap(workers_);
        keeper = std::move(keeper_);
    }
    keeper.stop();
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
    count_audit_job("queued");
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({job.id, false, base::shared_call_trace()});
        if (started_ && workers_.empty()) start_workers();
    }
    ready_.notify_one();
    return job;
}

std::optional<Job> AuditJobs::find(const std::string& id) { return store_->job(id); }

bool AuditJobs::cancel(const std::string& id) {
    const auto before = store_->cancel_job(id);
    if (!before) return false;
    count_audit_job("cancelled");
    // A queued id may still sit in queue_: the worker's claim refuses a cancelled job.
    if (*before == "running")
        log::warn(
            "audit job {} cancelled while running: its POST is already out, so the "
            "audit may still complete at the gateway (the result is kept)",
            id);
    else
        log::info("audit job {} cancelled before it was sent", id);
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

void AuditJobs::add_change_listener(Listener listener) {
    std::lock_guard lock(listener_mutex_);
    auto next = more_listeners_ ? std::make_shared<std::vector<Listener>>(*more_listeners_)
                                : std::make_shared<std::vector<Listener>>();
    next->push_back(std::move(listener));
    more_listeners_ = std::move(next);
}

void AuditJobs::changed(const std::string& id) {
    std::shared_ptr<const Listener> listener;
    std::shared_ptr<const std::vector<Listener>> more;
    {
        std::lock_guard lock(listener_mutex_);
        listener = listener_;
        more = more_listeners_;
    }
    if (!listener && !more) return;
    auto job = store_->job(id);
    if (!job) return;
    auto call = [&](const Listener& l) {
        try {
            l(*job);
        } catch (const std::exception& e) {
            // A listener's failure is its own; the job's state is already stored.
            log::error("audit job {}: change listener failed: {}", id, e.what());
        }
    };
    if (listener) call(*listener);
    if (more)
        for (const Listener& l : *more) call(l);
}

void AuditJobs::work(std::stop_token stop) {
    while (!stop.stop_requested()) {
        Pending pending;
        {
            std::unique_lock lock(mutex_);
            if (!ready_.wait(lock, stop, [this] { return !queue_.empty(); })) return;
            pending = std::move(queue_.front());
            queue_.pop_front();
        }
        auto trace = pending.trace;
        if (!trace) {
            auto own = std::make_shared<base::CallTrace>();
            own->trace = base::start_trace();
            own->method = "audit-job";
            own->tool = "run_seo_audit";
            trace = std::move(own);
        }
        const base::CallTraceScope traced(std::move(trace));
        try {
            run_one(pending, stop);
        } catch (const std::exception& e) {
            // A store failure must not kill the worker; the job stays unfinished for the next
            // start to retry.
            log::error("audit job {}: {}", pending.id, e.what());
        }
    }
}

namespace {

// What a succeeded job records, from the POST's data or the report row found at the gateway
// (the same fields either way).
json audit_result(const json& data, const std::string& url) {
    const auto id = data.find("id");
    json result = {
        {"report_id", id != data.end() && id->is_string() ? id->get<std::string>() : std::string()},
        {"url", url}};
    if (auto u = data.find("url"); u != data.end() && u->is_string()) result["url"] = *u;
    for (const char* field : {"score", "issues_found", "issue_counts", "share_url"})
        if (data.contains(field)) result[field] = data[field];
    return result;
}

}  // namespace

std::optional<json> AuditJobs::find_report(const Job& job, std::stop_token stop) {
    const std::string url = job.args.value("url", "");
    const std::chrono::sys_seconds not_before =
        std::chrono::sys_seconds(std::chrono::seconds(job.created_at)) - kReconcileSkew;
    std::optional<json> found;
    box_->gateway().for_each_row(
        {.resource = "seo_reports",
         .client_id = job.client_id,
         .order = "created_at",
         .direction = "desc"},
        [&](std::string_view raw) {
            json row = json::parse(raw, nullptr, false);
            if (!row.is_object()) return true;
            auto created = row.find("created_at");
            if (created == row.end() || !created->is_string()) return true;
            const auto at = base::parse_utc_time(created->get<std::string>());
            if (!at) return true;
            if (*at < not_before) return false;  // newest first: nothing further can match
            auto row_url = row.find("url");
            if (row_url != row.end() && row_url->is_string() && *row_url == url) {
                found = std::move(row);
                return false;
            }
            return true;
        },
        stop);
    return found;
}

void AuditJobs::date_report(const Job& job, const json& report, json& result,
                            std::stop_token stop) {
    std::optional<DatedMember> dated = newest_dated_member(report);
    const std::string report_id = result.value("report_id", "");
    if (!dated && !report_id.empty()) {
        // The answer carries no date (the spec promises none): the report row may.
        try {
            gateway::Page page = box_->gateway().read_body({.resource = "seo_reports",
                                                            .client_id = job.client_id,
                                                            .limit = 1,
                                                            .filter_field = "id",
                                                            .filter_value = report_id},
                                                           stop);
            static constexpr std::array<std::string_view, 1> kDrop{"issues"};
            const gateway::RowSelection without_issues{.drop = kDrop};
            box_->gateway().walk(page, {.select = &without_issues}, [&](const gateway::Row& row) {
                dated = newest_dated_member(json::parse(row.selected, nullptr, false));
                return false;
            });
        } catch (const gateway::Error& e) {
            // The audit succeeded either way; only its date stays unknown.
            log::info("audit job {}: could not read report {} to date it: {}", job.id, report_id,
                      e.what());
        }
    }
    if (!dated) return;
    result["report_date"] = dated->value;
    result["report_date_field"] = dated->field;
    const std::chrono::sys_seconds asked{std::chrono::seconds(job.created_at)};
    if (dated->at + kOldReportAge >= asked) return;
    const auto report_day = std::chrono::floor<std::chrono::days>(dated->at);
    const auto asked_day = std::chrono::floor<std::chrono::days>(asked);
    result["note"] = "the report is dated " + iso_day(report_day) + " (its " + dated->field +
                     "), " +
                     age_words(std::max<std::int64_t>(1, (asked_day - report_day).count())) +
                     " before this audit was asked (" + iso_day(asked_day) +
                     "): the gateway may have returned an old report rather than a new crawl "
                     "of the site";
}

void AuditJobs::run_one(const Pending& pending, std::stop_token stop) {
    const std::string& id = pending.id;
    // Finished, cancelled, or another instance's meanwhile: nothing to do here.
    auto job = store_->claim_job(id, sharing_.instance_id, sharing_.lease, pending.force);
    if (!job) return;
    count_audit_job("running");
    if (job->status != "running") changed(id);
    const std::string url = job->args.value("url", "");

    // Running before this claim: its POST may have reached the gateway (a previous process, or
    // an instance that died), so look before sending.
    if (job->status == "running") {
        try {
            if (auto report = find_report(*job, stop)) {
                json result = audit_result(*report, url);
                date_report(*job, *report, result, stop);
                store_->finish_job(id, true, result, nullptr);
                count_audit_job("succeeded");
                changed(id);
                log::info(
                    "audit job {} reconciled: its report {} is at the gateway, so it "
                    "was not sent again",
                    id, result["report_id"].get<std::string>());
                return;
            }
            log::info("audit job {}: no report for {} at the gateway; sending it again", id, url);
        } catch (const gateway::Error& e) {
            if (e.reason() == gateway::ErrorReason::cancelled) return;  // next start reconciles
            log::warn(
                "audit job {}: could not look for its report ({}); sending it again "
                "(seo_audit is retry-safe)",
                id, e.what());
        }
    }

    try {
        const gateway::ActionResult r =
            // A stop may cut the exchange: the job stays running in the store, and the next
            // start reconciles it with the gateway's reports before sending anything again.
            box_->gateway().act("seo_audit", job->client_id, {{"url", url}}, stop, stop);
        const json data = r.data.is_object() ? r.data : json::object();
        json result = audit_result(data, url);
        date_report(*job, data, result, stop);
        store_->finish_job(id, true, result, nullptr);
        count_audit_job("succeeded");
        changed(id);
        log::info("audit job {} succeeded: report {}", id, result["report_id"].get<std::string>());
    } catch (const gateway::Error& e) {
        if (e.reason() == gateway::ErrorReason::cancelled) return;  // shutting down: next start
        // The gateway's words may quote a crawled page: cleaned like its rows.
        json error = {{"reason", std::string(gateway::to_string(e.reason()))},
                      {"message", base::clean_untrusted_text(e.what())}};
        if (!e.gateway_error().empty())
            error["gateway_error"] = base::clean_untrusted_text(e.gateway_error());
        if (e.http_status()) error["http_status"] = e.http_status();
        if (e.status_code()) error["status_code"] = *e.status_code();
        store_->finish_job(id, false, nullptr, error);
        count_audit_job("failed");
        changed(id);
        log::warn("audit job {} failed: {}", id, e.what());
    }
}

}  // namespace agency::tools
