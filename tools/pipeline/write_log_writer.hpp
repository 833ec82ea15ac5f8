// The write log's one writer (issue 45, finding 8): every row the action pipeline makes goes
// through it, so that none is lost and none floods.
// - A row the store cannot take (PostgreSQL down, SQLite locked past its wait) is kept in the
//   spool (state/write_log_spool.hpp) with its settlement and appended, with its own time, as
//   soon as the store answers again, by this writer's thread (at once when another row goes
//   through, else within `retry`), or by the next process that drains the same spool.
// - Refusals (outcome "refused": nothing reached the gateway) are summarised per caller,
//   tool, client and reason: the first of a window is a row at once; the rest of that window
//   are counted, and one row says how many, between which times, when the window closes. A
//   read-only or out-of-scope key hammering an action leaves two rows a minute, not one per try.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

#include "base/clock.hpp"
#include "state/store.hpp"
#include "state/write_log_spool.hpp"

namespace agency::tools {

struct WriteLogWriterSettings {
    std::string spool_path;  // "" keeps spooled rows in memory
    std::chrono::seconds refusal_window{60};
    std::chrono::milliseconds retry{2000};  // how often the thread tries the spool
    std::size_t max_refusal_kinds = 1000;   // past it, refusals are rows of their own
};

class WriteLogWriter {
public:
    WriteLogWriter(std::shared_ptr<state::Store> store, WriteLogWriterSettings settings,
                   const base::Clock& clock);
    ~WriteLogWriter();  // closes every open refusal window and tries the spool once more
    WriteLogWriter(const WriteLogWriter&) = delete;
    WriteLogWriter& operator=(const WriteLogWriter&) = delete;

    // Records one row (settling its key and slot with it). Throws nothing: a row neither the
    // store nor the spool can take is logged whole as an error.
    void append(state::WriteLogEntry entry, const state::Store::Settlement& settle = {});

    // Writes the summaries of the refusal windows that have closed (every one with `all`) and
    // appends what the spool holds, now.
    void flush(bool all = false);

    std::size_t spooled() const { return spool_.waiting(); }
    const std::string& spool_path() const { return spool_.path(); }

private:
    struct Window {
        state::WriteLogEntry first;  // the row written when the window opened
        std::int64_t opened_ms = 0;
        std::int64_t last_ms = 0;
        std::size_t more = 0;  // refusals after the first, not yet written
    };
    using Kind = std::tuple<std::string, std::string, std::string, std::string>;

    void write(const state::WriteLogEntry& entry, const state::Store::Settlement& settle);
    void drain_spool();
    // Has the thread look at the spool now rather than at its next round.
    void wake_now();
    void close_windows(bool all);
    void run(std::stop_token stop);

    std::shared_ptr<state::Store> store_;
    WriteLogWriterSettings settings_;
    const base::Clock& clock_;
    state::WriteLogSpool spool_;
    std::mutex drain_mutex_;
    std::mutex windows_mutex_;
    std::map<Kind, Window> windows_;
    std::mutex wake_mutex_;
    std::condition_variable_any wake_;
    bool woken_ = false;   // wake_mutex_
    std::jthread worker_;  // last: it stops before the members above go
};

}  // namespace agency::tools
