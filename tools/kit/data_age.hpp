// How old dated data is, in the words an answer's note uses: a tracking date against the date
// asked and against today (today from the Toolbox's base::Clock, never the system clock
// directly), and an audit report's date against the moment its audit was asked.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"

namespace agency::tools {

// The day a "YYYY-MM-DD..." text starts with (a date, or an RFC 3339 time's date), nullopt
// when it does not start with one.
std::optional<std::chrono::sys_days> day_of(std::string_view text);

// "YYYY-MM-DD".
std::string iso_day(std::chrono::sys_days day);

// Today (UTC) by `clock`, "YYYY-MM-DD".
std::string today_of(const base::Clock& clock);

// Whole days from `earlier` to `later` (negative when `later` is before); nullopt when either
// is not a date.
std::optional<std::int64_t> days_between(std::string_view earlier, std::string_view later);

// A span of days in words: "1 day", "13 days", "14 months", "3 years" (days up to 59, months
// up to 23, then years).
std::string age_words(std::int64_t days);

// A tracking date this many days or fewer away from the date asked (or today) is not worth a
// note: weekly tracking alone puts a date up to 6 days before any day asked.
inline constexpr std::int64_t kTrackingSlackDays = 7;

// A top-level member of a record that dates it, found by meaning rather than one name:
// "date", "timestamp", or a name ending in "_at", "_date", "_on" or "_time" (created_at,
// crawled_at, completed_at, report_date, ...), but not one that looks ahead (expires_*, due_*,
// next_*, scheduled_*), whose value is a UTC date or time.
struct DatedMember {
    std::string field;
    std::string value;
    std::chrono::sys_seconds at;
};

// The newest of a record's dating members; nullopt when it has none.
std::optional<DatedMember> newest_dated_member(const nlohmann::json& record);

}  // namespace agency::tools
