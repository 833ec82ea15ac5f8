#include "tools/kit/data_age.hpp"

#include <cstdio>

namespace agency::tools {

std::optional<std::chrono::sys_days> day_of(std::string_view text) {
    if (text.size() < 10) return std::nullopt;
    const auto at = base::parse_utc_time(text.substr(0, 10));
    if (!at) return std::nullopt;
    return std::chrono::floor<std::chrono::days>(*at);
}

std::string iso_day(std::chrono::sys_days day) {
    const std::chrono::year_month_day ymd{day};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()) % 10000,
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
    return text;
}

std::string today_of(const base::Clock& clock) {
    return iso_day(std::chrono::floor<std::chrono::days>(clock.wall()));
}

std::optional<std::int64_t> days_between(std::string_view earlier, std::string_view later) {
    const auto a = day_of(earlier);
    const auto b = day_of(later);
    if (!a || !b) return std::nullopt;
    return (*b - *a).count();
}

std::string age_words(std::int64_t days) {
    if (days < 0) days = -days;
    if (days == 1) return "1 day";
    if (days < 60) return std::to_string(days) + " days";
    // Months of 365.25 / 12 days, rounded to the nearest.
    const std::int64_t months = (days * 48 + 731) / 1461;
    if (months < 24) return std::to_string(months) + " months";
    return std::to_string((months + 6) / 12) + " years";
}

namespace {

bool dating_name(std::string_view name) {
    for (std::string_view ahead : {"expires", "expiry", "due", "next", "scheduled", "valid_until"})
        if (name.starts_with(ahead)) return false;
    if (name == "date" || name == "timestamp") return true;
    for (std::string_view end : {"_at", "_date", "_on", "_time"})
        if (name.size() > end.size() && name.ends_with(end)) return true;
    return false;
}

}  // namespace

std::optional<DatedMember> newest_dated_member(const nlohmann::json& record) {
    if (!record.is_object()) return std::nullopt;
    std::optional<DatedMember> newest;
    for (const auto& [name, value] : record.items()) {
        if (!value.is_string() || !dating_name(name)) continue;
        const std::string& text = value.get_ref<const std::string&>();
        // A time in another zone than UTC still dates the record by its day.
        std::optional<std::chrono::sys_seconds> at = base::parse_utc_time(text);
        if (!at)
            if (const auto day = day_of(text)) at = std::chrono::sys_seconds(*day);
        if (!at) continue;
        if (!newest || *at > newest->at) newest = DatedMember{name, text, *at};
    }
    return newest;
}

}  // namespace agency::tools
