#include "base/log_summary.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <set>
#include <stop_token>
#include <system_error>
#include <thread>

namespace agency::log {

namespace {

constexpr std::size_t kPeerChars = 64;

// A peer as a log line may carry it: printable ASCII, cut (an address or a principal's name
// from outside must not forge lines or fill the log).
std::string clean_peer(std::string_view peer) {
    std::string out(peer.substr(0, kPeerChars));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    if (out.empty()) out = "-";
    if (peer.size() > kPeerChars) out += "...";
    return out;
}

std::string seconds_text(std::int64_t ms) {
    return std::to_string(std::max<std::int64_t>(1, (ms + 999) / 1000)) + " s";
}

// Set once the writer below is destroyed (at exit): an instance that outlives it (held by
// another static) must not reach it. Constant-initialized, so valid throughout exit.
std::atomic<bool> writer_gone{false};

// The process's one thread that writes due summaries, started at the first counted repeat:
// a burst that stops still gets its summary within about a second past its interval.
class BackgroundWriter {
public:
    static BackgroundWriter& instance() {
        static BackgroundWriter writer;
        return writer;
    }
    // False when no thread could be made (summaries then wait for the next occurrence).
    bool add(RepeatedLines* lines) {
        std::lock_guard lock(mutex_);
        if (!thread_.joinable()) {
            try {
                thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
            } catch (const std::system_error&) {
                return false;
            }
        }
        members_.insert(lines);
        return true;
    }
    void remove(RepeatedLines* lines) {
        std::lock_guard lock(mutex_);
        members_.erase(lines);
    }
    ~BackgroundWriter() {
        writer_gone = true;
        thread_.request_stop();
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

private:
    void run(std::stop_token stop) {
        std::unique_lock lock(mutex_);
        while (!stop.stop_requested()) {
            wake_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
            if (stop.stop_requested()) return;
            // Held while flushing: an instance leaves (remove) only between two rounds.
            for (RepeatedLines* lines : members_) lines->flush_due();
        }
    }

    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::set<RepeatedLines*> members_;
    std::jthread thread_;
};

}  // namespace

RepeatedLines::RepeatedLines(const base::Clock& clock, Options options)
    : clock_(clock), options_(options) {
    options_.interval = std::max(options_.interval, std::chrono::milliseconds(1));
    options_.peers = std::max<std::size_t>(1, options_.peers);
    options_.kinds = std::max<std::size_t>(1, options_.kinds);
}

RepeatedLines::~RepeatedLines() {
    bool registered = false;
    {
        std::lock_guard lock(mutex_);
        registered = registered_;
    }
    if (registered && !writer_gone) BackgroundWriter::instance().remove(this);
    flush_all();
}

RepeatedLines::Kind& RepeatedLines::kind_for(std::string_view name, std::int64_t now_ms) {
    for (Kind& k : kinds_)
        if (k.name == name) return k;
    if (kinds_.size() >= options_.kinds) {
        // An idle kind's place is taken; with none idle, the last one is shared (a bound, and
        // kinds are the program's constants: not reached in practice).
        auto idle = std::find_if(kinds_.begin(), kinds_.end(),
                                 [](const Kind& k) { return !k.active && k.count == 0; });
        if (idle == kinds_.end()) return kinds_.back();
        kinds_.erase(idle);
    }
    Kind k;
    k.name = std::string(name);
    k.window_ms = now_ms;
    kinds_.push_back(std::move(k));
    return kinds_.back();
}

void RepeatedLines::count(Kind& k, std::string_view peer) {
    const std::int64_t now_unix = clock_.unix_ms();
    if (k.count == 0) k.first_unix_ms = now_unix;
    k.last_unix_ms = now_unix;
    ++k.count;
    const std::string cleaned = clean_peer(peer);
    for (auto& [name, n] : k.peers)
        if (name == cleaned) {
            ++n;
            return;
        }
    if (k.peers.size() < options_.peers)
        k.peers.emplace_back(cleaned, 1);
    else
        ++k.other_peers;
}

std::string RepeatedLines::take_summary(Kind& k, std::int64_t now_ms) {
    std::string peers;
    for (const auto& [name, n] : k.peers)
        peers += (peers.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
    if (k.other_peers > 0)
        peers += ", other peers (" + std::to_string(k.other_peers) + ")";
    std::string line = k.name + ": " + std::to_string(k.count) + " more in the last " +
                       seconds_text(now_ms - k.window_ms) + " (first " +
                       base::iso8601_ms(k.first_unix_ms) + ", last " +
                       base::iso8601_ms(k.last_unix_ms) + ") from " + peers;
    k.count = 0;
    k.peers.clear();
    k.other_peers = 0;
    k.window_ms = now_ms;
    return line;
}

bool RepeatedLines::admit(Level level, std::string_view kind, std::string_view peer) {
    std::vector<std::pair<Level, std::string>> lines;
    bool first = false, start = false;
    {
        std::lock_guard lock(mutex_);
        const std::int64_t now = clock_.steady_ms();
        if (now >= next_flush_ms_) flush(false, lines);
        Kind& k = kind_for(kind, now);
        k.level = level;
        if (!k.active) {
            k.active = true;
            k.window_ms = now;
            first = true;
        } else {
            count(k, peer);
            start = !registered_ && options_.background;
            if (start) registered_ = true;
        }
    }
    for (const auto& [at, text] : lines) log::write(at, text);
    if (start) start_background();
    return first;
}

void RepeatedLines::start_background() {
    if (BackgroundWriter::instance().add(this)) return;
    std::lock_guard lock(mutex_);
    registered_ = false;
}

void RepeatedLines::write_first(Level level, const std::string& line) const {
    log::write(level, line + " (repeats are counted and summarised every " +
                          seconds_text(options_.interval.count()) + ")");
}

// With `all`, every kind with a count; else those whose interval has ended. A kind whose
// interval passed with nothing counted goes quiet: its next occurrence is a first line again.
void RepeatedLines::flush(bool all, std::vector<std::pair<Level, std::string>>& out) {
    // Nothing counted: the clock is not asked (an owner may be going away after its clock).
    if (std::none_of(kinds_.begin(), kinds_.end(), [](const Kind& k) { return k.active; }))
        return;
    const std::int64_t now = clock_.steady_ms();
    const std::int64_t interval = options_.interval.count();
    std::int64_t next = now + interval;
    for (Kind& k : kinds_) {
        if (!k.active) continue;
        const bool due = now - k.window_ms >= interval;
        if (k.count > 0 && (due || all)) {
            out.emplace_back(k.level, take_summary(k, now));
        } else if (due) {
            k.active = false;
            continue;
        }
        next = std::min(next, k.window_ms + interval);
    }
    next_flush_ms_ = next;
}

void RepeatedLines::flush_due() {
    std::vector<std::pair<Level, std::string>> lines;
    {
        std::lock_guard lock(mutex_);
        flush(false, lines);
    }
    for (const auto& [level, text] : lines) log::write(level, text);
}

void RepeatedLines::flush_all() {
    std::vector<std::pair<Level, std::string>> lines;
    {
        std::lock_guard lock(mutex_);
        flush(true, lines);
    }
    for (const auto& [level, text] : lines) log::write(level, text);
}

std::size_t RepeatedLines::pending() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const Kind& k : kinds_) n += k.count;
    return n;
}

std::size_t RepeatedLines::peers_held() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const Kind& k : kinds_) n += k.peers.size();
    return n;
}

}  // namespace agency::log
