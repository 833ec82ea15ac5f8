// Lines a caller can cause once per request (a refused token or key, a call over the rate
// limit, malformed params) summarised, so that a flood of requests cannot flood the log: the
// first occurrence of a kind is written as it is, with its peer (an address or a principal);
// the ones after it within an interval are counted, and one summary line per interval and kind
// says how many, the first and last time, and a few peers with their counts. Memory is bounded
// whatever the number of peers (a few named, the rest counted together) and of kinds.
//
// Time comes from a base::Clock (tests drive a ManualClock and call flush_due()); a summary is
// written by the next occurrence after its interval, by flush_due(), by a background thread of
// the process (started at the first counted repeat, when Options::background) so that the count
// of a burst that stopped is not held back, and by the destructor.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "base/log.hpp"

namespace agency::log {

class RepeatedLines {
public:
    struct Options {
        std::chrono::milliseconds interval{60'000};
        std::size_t peers = 4;   // distinct peers named in a summary; the rest counted together
        std::size_t kinds = 32;  // kinds tracked; beyond, an idle one goes, else one is shared
        bool background = true;  // a process thread writes due summaries (tests: false)
    };
    // `clock` must outlive this.
    explicit RepeatedLines(const base::Clock& clock, Options options);
    explicit RepeatedLines(const base::Clock& clock) : RepeatedLines(clock, Options{}) {}
    ~RepeatedLines();
    RepeatedLines(const RepeatedLines&) = delete;
    RepeatedLines& operator=(const RepeatedLines&) = delete;

    // One occurrence of `kind` (a constant naming the line, e.g. "OAuth: token refused") from
    // `peer`: the line `format` makes is written when this is the first of its interval (then
    // formatted, and told that repeats are summarised); else it is only counted. The peer is
    // kept cleaned and cut (never pass a secret as the peer or in the line).
    template <typename... Args>
    void write(Level level, std::string_view kind, std::string_view peer,
               fmt::format_string<Args...> format, Args&&... args) {
        if (!admit(level, kind, peer)) return;
        write_first(level, log::vformat(format, fmt::make_format_args(args...)));
    }

    // Writes the summaries whose interval has ended.
    void flush_due();
    // Writes every pending summary now (whatever its interval).
    void flush_all();
    // Occurrences counted and not yet summarised, over every kind (tests).
    std::size_t pending() const;
    // Peers held now over every kind (tests: the bound on memory).
    std::size_t peers_held() const;

private:
    struct Kind {
        std::string name;
        Level level = Level::info;
        bool active = false;           // a first line written, its interval running
        std::int64_t window_ms = 0;    // steady time the interval began
        std::uint64_t count = 0;       // counted since, not yet summarised
        std::int64_t first_unix_ms = 0, last_unix_ms = 0;
        std::vector<std::pair<std::string, std::uint64_t>> peers;
        std::uint64_t other_peers = 0;  // occurrences from peers beyond the named ones
    };
    // True when the line is to be written (the first of an interval).
    bool admit(Level level, std::string_view kind, std::string_view peer);
    void write_first(Level level, const std::string& line) const;
    Kind& kind_for(std::string_view name, std::int64_t now_ms);
    void count(Kind& k, std::string_view peer);
    // The summary line of `k` (its count > 0), then its counters reset for a new interval.
    std::string take_summary(Kind& k, std::int64_t now_ms);
    void flush(bool all, std::vector<std::pair<Level, std::string>>& out);
    void start_background();

    const base::Clock& clock_;
    Options options_;
    mutable std::mutex mutex_;
    std::vector<Kind> kinds_;
    std::int64_t next_flush_ms_ = 0;
    bool registered_ = false;  // with the process's background writer
};

}  // namespace agency::log
