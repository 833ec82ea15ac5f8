#include "base/clock.hpp"

#include <array>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <ctime>

namespace agency::base {

namespace {

class SystemClock final : public Clock {
public:
    std::chrono::system_clock::time_point wall() const override {
        return std::chrono::system_clock::now();
    }
    std::chrono::steady_clock::time_point steady() const override {
        return std::chrono::steady_clock::now();
    }
};

// Formats to the second; returns the length written.
std::size_t format_seconds(std::int64_t unix_seconds, char* out, std::size_t size) {
    const auto secs = static_cast<std::time_t>(unix_seconds);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return std::strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
}

// Parses exactly `width` digits at text[pos].
std::optional<int> digits(std::string_view text, std::size_t pos, std::size_t width) {
    if (pos + width > text.size()) return std::nullopt;
    int value = 0;
    for (std::size_t i = pos; i < pos + width; ++i) {
        const char c = text[i];
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    return value;
}

}  // namespace

std::int64_t Clock::unix_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(wall().time_since_epoch()).count();
}

std::int64_t Clock::unix_s() const {
    return std::chrono::duration_cast<std::chrono::seconds>(wall().time_since_epoch()).count();
}

std::int64_t Clock::steady_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady().time_since_epoch())
        .count();
}

bool Clock::sleep_for(std::chrono::milliseconds duration, const std::stop_token& stop) const {
    if (duration.count() > 0) {
        std::mutex mu;
        std::condition_variable_any cv;
        std::unique_lock lock(mu);
        cv.wait_for(lock, stop, duration, [] { return false; });
    }
    return !stop.stop_requested();
}

const Clock& Clock::system() {
    static const SystemClock clock;
    return clock;
}

std::string iso8601_ms(std::int64_t unix_ms) {
    char buf[48];
    std::size_t n = format_seconds(unix_ms / 1000, buf, sizeof buf);
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(unix_ms % 1000));
    return buf;
}

std::optional<std::chrono::sys_seconds> parse_utc_time(std::string_view text) {
    using namespace std::chrono;
    const auto year = digits(text, 0, 4);
    const auto month = digits(text, 5, 2);
    const auto day = digits(text, 8, 2);
    if (!year || !month || !day || text[4] != '-' || text[7] != '-') return std::nullopt;
    const year_month_day date{std::chrono::year{*year}, std::chrono::month{unsigned(*month)},
                              std::chrono::day{unsigned(*day)}};
    if (!date.ok()) return std::nullopt;
    const sys_seconds midnight{sys_days{date}};
    if (text.size() == 10) return midnight;
    if (text[10] != 'T' && text[10] != 't' && text[10] != ' ') return std::nullopt;
    const auto hh = digits(text, 11, 2);
    const auto mm = digits(text, 14, 2);
    const auto ss = digits(text, 17, 2);
    if (!hh || !mm || !ss || text[13] != ':' || text[16] != ':' || *hh > 23 || *mm > 59 ||
        *ss > 60) {
        return std::nullopt;
    }
    auto zone = text.substr(19);
    if (!zone.empty() && zone.front() == '.') {  // fractional seconds: truncated
        std::size_t i = 1;
        while (i < zone.size() && zone[i] >= '0' && zone[i] <= '9') ++i;
        if (i == 1) return std::nullopt;
        zone.remove_prefix(i);
    }
    if (!(zone.empty() || zone == "Z" || zone == "z" || zone == "+00:00" || zone == "-00:00" ||
          zone == "+0000")) {
        return std::nullopt;  // only UTC is expected from the gateway
    }
    return midnight + hours{*hh} + minutes{*mm} + seconds{*ss};
}

std::string format_utc_time(std::chrono::system_clock::time_point at) {
    using namespace std::chrono;
    const auto secs = floor<seconds>(at);
    const auto day_start = floor<days>(secs);
    const year_month_day date{day_start};
    const hh_mm_ss<seconds> time{secs - day_start};
    std::array<char, 32> buf{};
    const int n =
        std::snprintf(buf.data(), buf.size(), "%04d-%02u-%02uT%02d:%02d:%02dZ", int(date.year()),
                      unsigned(date.month()), unsigned(date.day()), int(time.hours().count()),
                      int(time.minutes().count()), int(time.seconds().count()));
    return std::string(buf.data(), n > 0 ? std::size_t(n) : 0);
}

}  // namespace agency::base
