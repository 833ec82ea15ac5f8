#include "tools/pipeline/write_log_writer.hpp"

#include <optional>
#include <vector>

#include "base/log.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

namespace {

// The row that says how many refusals a window counted after its first.
state::WriteLogEntry summary_row(const state::WriteLogEntry& first, std::size_t more,
                                 std::int64_t last_ms) {
    state::WriteLogEntry summary = first;
    summary.id = state::new_write_log_id();
    summary.at_ms = last_ms;
    summary.detail = std::to_string(more) + " more refusal(s) like the row of " +
                     iso_time(first.at_ms / 1000) + ", until " + iso_time(last_ms / 1000) +
                     "; none reached the gateway";
    return summary;
}

}  // namespace

WriteLogWriter::WriteLogWriter(std::shared_ptr<state::Store> store, WriteLogWriterSettings settings,
                               const base::Clock& clock)
    : store_(std::move(store)),
      settings_(std::move(settings)),
      clock_(clock),
      spool_(settings_.spool_path) {
    if (spool_.waiting() > 0)
        log::warn("write log: {} row(s) kept in {} while the store was unavailable; appending them",
                  spool_.waiting(), spool_.path());
    worker_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

WriteLogWriter::~WriteLogWriter() {
    worker_.request_stop();
    if (worker_.joinable()) worker_.join();
    close_windows(true);
    drain_spool();
    if (spool_.waiting() > 0)
        log::error(
            "write log: {} row(s) still wait in {} for the store; the next start (or "
            "`agency-mcp write-log`) appends them",
            spool_.waiting(), spool_.path().empty() ? "memory (lost now)" : spool_.path());
}

void WriteLogWriter::wake_now() {
    {
        std::lock_guard lock(wake_mutex_);
        woken_ = true;
    }
    wake_.notify_one();
}

void WriteLogWriter::run(std::stop_token stop) {
    while (!stop.stop_requested()) {
        {
            std::unique_lock lock(wake_mutex_);
            wake_.wait_for(lock, stop, settings_.retry, [this] { return woken_; });
            woken_ = false;
        }
        if (stop.stop_requested()) return;
        close_windows(false);
        if (spool_.waiting() > 0) drain_spool();
    }
}

void WriteLogWriter::drain_spool() {
    std::unique_lock lock(drain_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;  // another thread is at it
    const state::WriteLogSpool::Drained d = spool_.drain(*store_);
    if (d.appended > 0)
        log::info("write log: {} row(s) kept while the store was unavailable are appended{}",
                  d.appended, d.left > 0 ? " (" + std::to_string(d.left) + " still wait)" : "");
    if (d.unreadable > 0)
        log::error("write log: {} line(s) of {} were not rows; set aside in {}.bad", d.unreadable,
                   spool_.path(), spool_.path());
}

void WriteLogWriter::write(const state::WriteLogEntry& entry,
                           const state::Store::Settlement& settle) {
    try {
        store_->append_write_log_settling(entry, settle);
        // The store answers again: the thread appends what waits, not this call's thread.
        if (spool_.waiting() > 0) wake_now();
        return;
    } catch (const std::exception& e) {
        // The key and the slot each on their own, at once where the store lets them (the
        // spool settles them again with the row: both are idempotent).
        if (!settle.key.empty()) {
            try {
                store_->complete_idempotency(settle.principal, settle.tool, settle.key,
                                             settle.is_error, settle.result);
            } catch (const std::exception&) {
                // Left pending until the spool settles it; a repeat past its lease checks the
                // gateway for the record meanwhile.
            }
        }
        if (!settle.slot_id.empty()) {
            try {
                store_->release_credit(settle.slot_id);
            } catch (const std::exception&) {
                // The spool releases it with the row; until then it counts as in flight.
            }
        }
        const std::string why = spool_.keep(entry, settle);
        if (why.empty()) {
            log::warn(
                "write log: the store could not take the row of {} by {} on {} (outcome "
                "{}): {}; kept in {} until it can",
                entry.tool, entry.principal, entry.client_id, entry.outcome, e.what(),
                spool_.path().empty() ? "memory" : spool_.path());
            return;
        }
        log::error(
            "write log: could not record {} by {} on {} (outcome {}{}{}): {}; nor keep "
            "it: {}",
            entry.tool, entry.principal, entry.client_id, entry.outcome,
            entry.record_id.empty() ? "" : ", record ", entry.record_id, e.what(), why);
    }
}

void WriteLogWriter::append(state::WriteLogEntry entry, const state::Store::Settlement& settle) {
    if (entry.id.empty()) entry.id = state::new_write_log_id();
    if (entry.at_ms == 0) entry.at_ms = clock_.unix_ms();
    std::optional<state::WriteLogEntry> closed;  // a window's count, before the new first row
    if (entry.outcome == "refused" && settle.key.empty() && settle.slot_id.empty()) {
        const std::int64_t now = clock_.unix_ms();
        const std::int64_t window_ms = settings_.refusal_window.count() * 1000;
        const Kind kind{entry.principal, entry.tool, entry.client_id, entry.reason};
        std::lock_guard lock(windows_mutex_);
        auto open = windows_.find(kind);
        if (open != windows_.end() && now - open->second.opened_ms < window_ms) {
            ++open->second.more;
            open->second.last_ms = entry.at_ms;
            return;
        }
        const Window fresh{.first = entry, .opened_ms = now, .last_ms = entry.at_ms};
        if (open != windows_.end()) {
            if (open->second.more > 0)
                closed = summary_row(open->second.first, open->second.more, open->second.last_ms);
            open->second = fresh;
        } else if (windows_.size() < settings_.max_refusal_kinds) {
            windows_.emplace(kind, fresh);
        }  // else too many kinds at once to summarise: each is a row of its own
    }
    if (closed) write(*closed, {});
    write(entry, settle);
}

void WriteLogWriter::close_windows(bool all) {
    std::vector<state::WriteLogEntry> summaries;
    {
        const std::int64_t now = clock_.unix_ms();
        const std::int64_t window_ms = settings_.refusal_window.count() * 1000;
        std::lock_guard lock(windows_mutex_);
        for (auto it = windows_.begin(); it != windows_.end();) {
            if (!all && now - it->second.opened_ms < window_ms) {
                ++it;
                continue;
            }
            const Window& w = it->second;
            if (w.more > 0) summaries.push_back(summary_row(w.first, w.more, w.last_ms));
            it = windows_.erase(it);
        }
    }
    for (const auto& s : summaries) write(s, {});
}

void WriteLogWriter::flush(bool all) {
    close_windows(all);
    drain_spool();
}

}  // namespace agency::tools
