// The sample gateway's fault injection, request log and stats, and the /_control path.
#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "gateway/sample/sample_internal.hpp"

namespace agency::sample {

using json = nlohmann::json;

namespace {

constexpr std::size_t kMaxLogEntries = 200'000;  // bounds memory under long benchmarks

}  // namespace

const char* mode_name(FaultMode mode) {
    switch (mode) {
        case FaultMode::fail_before: return "fail_before";
        case FaultMode::fail_after: return "fail_after";
        case FaultMode::status_error: return "status_error";
        case FaultMode::rate_limit: return "rate_limit";
        case FaultMode::slow: return "slow";
        case FaultMode::drop: return "drop";
        case FaultMode::reset: return "reset";
        case FaultMode::huge: return "huge";
        case FaultMode::endless: return "endless";
        case FaultMode::dripping: return "dripping";
        case FaultMode::redirect: return "redirect";
        case FaultMode::random_status: return "random_status";
        // issue 30, rows
        case FaultMode::deep: return "deep";
        case FaultMode::wide: return "wide";
        case FaultMode::many_resources: return "many_resources";
        case FaultMode::ignores_offset: return "ignores_offset";
    }
    return "unknown";
}

std::optional<FaultMode> mode_from_name(std::string_view name) {
    for (auto mode : {FaultMode::fail_before, FaultMode::fail_after, FaultMode::status_error,
                      FaultMode::rate_limit, FaultMode::slow, FaultMode::drop, FaultMode::reset}) {
        if (name == mode_name(mode)) return mode;
    }
    for (auto mode : {FaultMode::huge, FaultMode::endless, FaultMode::dripping,
                      FaultMode::redirect, FaultMode::random_status}) {
        if (name == mode_name(mode)) return mode;
    }
    // issue 30, rows
    for (auto mode : {FaultMode::deep, FaultMode::wide, FaultMode::many_resources,
                      FaultMode::ignores_offset})
        if (name == mode_name(mode)) return mode;
    return std::nullopt;
}

// A read page of one row, hostile in shape; discovery with `size` more resources.
Reply Gateway::Impl::hostile_reply(const std::string& target, const Fault& fault, Reply normal) {
    const auto n = static_cast<std::size_t>(std::max(fault.size, 1));
    if (fault.mode == FaultMode::many_resources) {
        json body = json::parse(normal.body, nullptr, false);
        if (!body.is_object() || !body.contains("resources")) return normal;
        for (std::size_t i = 0; i < n; ++i)
            body["resources"].push_back("extra_resource_" + std::to_string(i + 1));
        normal.body = body.dump();
        return normal;
    }
    if (normal.status != 200) return normal;
    Reply reply;
    std::string& out = reply.body;
    out = "{\"resource\":\"" + target + "\",\"data\":[{\"id\":\"hostile-1\"";
    if (fault.mode == FaultMode::deep) {
        // The row is level 1: n levels in all.
        out += ",\"nested\":";
        out.append(n - 1, '[');
        out += '1';
        out.append(n - 1, ']');
    } else {
        out.reserve(n * 16);  // n members, the id among them
        for (std::size_t i = 1; i < n; ++i) out += ",\"f" + std::to_string(i) + "\":\"v\"";
    }
    out += "}],\"pagination\":{\"total\":1,\"limit\":100,\"offset\":0,\"has_more\":false}}";
    return reply;
}

bool is_loopback(const std::string& addr) {
    return addr == "127.0.0.1" || addr == "::1" || addr == "::ffff:127.0.0.1";
}

std::optional<Fault> Gateway::Impl::take_fault(const std::string& target,
                                              std::optional<FaultMode> only) {
    std::lock_guard lock(fault_mutex);
    for (auto it = faults.begin(); it != faults.end(); ++it) {
        if (it->target != "*" && it->target != target) continue;
        if (only ? it->mode != *only : it->mode == FaultMode::ignores_offset) continue;
        if (it->percent > 0) {
            std::uniform_real_distribution<double> draw(0.0, 100.0);
            if (draw(fault_rng) >= it->percent) continue;
            Fault fault = *it;
            if (it->count > 0 && --it->count == 0) faults.erase(it);
            return fault;
        }
        Fault fault = *it;
        if (--it->count <= 0) faults.erase(it);
        return fault;
    }
    return std::nullopt;
}

// The work of an action ran: counted, and a repeat of one body noted (retry-safe actions
// excepted, spec rule 2).
void Gateway::Impl::note_execution(const std::string& action, const json& body) {
    const std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    const std::uint64_t key = std::hash<std::string>{}(text);
    std::lock_guard lock(log_mutex);
    ++stats.executions[action];
    if (action == "seo_audit" || action == "fetch_backlinks") return;
    if (++executed_bodies[key] < 2) return;
    ++stats.duplicate_executions[action];
    if (stats.duplicate_examples.size() < kMaxExamples)
        stats.duplicate_examples.push_back(text.substr(0, 300));
}

void Gateway::Impl::record(const httplib::Request& req, const Reply& reply) {
    LoggedRequest entry;
    entry.method = req.method;
    entry.target = reply.target;
    entry.client_id = reply.client_id;
    entry.detail = req.method == "POST" ? req.body : query_of(req);
    entry.status = reply.drop ? 0 : reply.status;
    entry.fault = reply.fault;
    entry.traceparent = req.get_header_value("traceparent");
    entry.at = std::chrono::system_clock::now();
    std::lock_guard lock(log_mutex);
    --in_flight;
    if (req.method == "POST") --posts_in_flight;
    if (entry.method == "POST")
        ++stats.posts[entry.target];
    else
        ++stats.gets;
    if (!entry.fault.empty()) ++stats.faults[entry.fault];
    log.push_back(std::move(entry));
    if (log.size() > kMaxLogEntries) log.pop_front();
}

void Gateway::Impl::control_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
}

void Gateway::Impl::add_fault_from(const httplib::Request& req, httplib::Response& res) {
    json body;
    try {
        body = json::parse(req.body);
    } catch (const json::parse_error& e) {
        return control_json(res, 400, {{"error", std::string("malformed JSON body: ") + e.what()}});
    }
    const std::string modes =
        "fail_before, fail_after, status_error, rate_limit, slow, drop, reset, " +
        std::string(kHostileModeNames);
    if (!body.is_object() || !body.contains("target") || !body["target"].is_string()) {
        return control_json(res, 400,
                            {{"error",
                              "body needs \"target\" (action, resource, \"\" "
                              "for discovery, or \"*\") and \"mode\" (" +
                                  modes + ")"}});
    }
    const auto mode = mode_from_name(body.value("mode", ""));
    if (!mode) {
        return control_json(res, 400, {{"error", "unknown mode; allowed modes: " + modes}});
    }
    Fault fault;
    fault.target = body["target"].get<std::string>();
    fault.mode = *mode;
    try {
        fault.count = body.value("count", fault.count);
        fault.status_code = body.value("status_code", fault.status_code);
        fault.retry_after_s = body.value("retry_after_s", fault.retry_after_s);
        fault.delay_ms = body.value("delay_ms", fault.delay_ms);
        fault.percent = body.value("percent", fault.percent);
        fault.bytes = body.value("bytes", fault.bytes);
        fault.redirect_port = body.value("redirect_port", fault.redirect_port);
        fault.size = body.value("size", fault.size);  // issue 30, rows
    } catch (const json::exception&) {
        return control_json(res, 400,
                            {{"error",
                              "count, status_code, retry_after_s, delay_ms, bytes and "
                              "redirect_port must be integers, percent a number"}});
    }
    if (!(fault.percent >= 0 && fault.percent <= 100)) {
        return control_json(res, 400, {{"error", "percent must be from 0 to 100"}});
    }
    inject(std::move(fault));
    control_json(res, 200, {{"ok", true}});
}

void Gateway::Impl::inject(Fault fault) {
    if (fault.count <= 0 && fault.percent <= 0) return;
    std::lock_guard lock(fault_mutex);
    faults.push_back(std::move(fault));
}

json Gateway::Impl::stats_json() const {
    const Stats s = [&] {
        std::lock_guard lock(log_mutex);
        return stats;
    }();
    std::uint64_t posts = 0, duplicates = 0;
    for (const auto& [action, n] : s.posts) posts += n;
    for (const auto& [action, n] : s.duplicate_executions) duplicates += n;
    return {{"gets", s.gets},
            {"posts", posts},
            {"posts_by_action", s.posts},
            {"executions_by_action", s.executions},
            {"faults_by_mode", s.faults},
            {"duplicate_executions", duplicates},
            {"duplicate_executions_by_action", s.duplicate_executions},
            {"duplicate_examples", s.duplicate_examples}};
}

json Gateway::Impl::log_json() const {
    json out = json::array();
    std::lock_guard lock(log_mutex);
    for (const auto& e : log) {
        out.push_back({{"method", e.method},
                       {"target", e.target},
                       {"client_id", e.client_id},
                       {"detail", e.detail},
                       {"status", e.status},
                       {"fault", e.fault},
                       {"traceparent", e.traceparent},
                       {"at", detail::iso_time(std::chrono::floor<std::chrono::seconds>(e.at))}});
    }
    return out;
}

Fault parse_fault(const std::string& text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const auto colon = text.find(':', start);
        parts.push_back(text.substr(start, colon - start));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    const std::string shape =
        "expected TARGET:MODE[:PERCENT[:N]], e.g. '*:fail_after:1' or "
        "'generate_blog:slow:5:4000'";
    if (parts.size() < 2 || parts.size() > 4)
        throw std::invalid_argument("fault '" + text + "': " + shape);
    Fault fault;
    fault.target = parts[0];
    const auto mode = mode_from_name(parts[1]);
    if (!mode) {
        throw std::invalid_argument("fault '" + text + "': unknown mode '" + parts[1] +
                                    "'; modes: fail_before, fail_after, status_error, "
                                    "rate_limit, slow, drop, reset, " +
                                    std::string(kHostileModeNames));
    }
    fault.mode = *mode;
    fault.count = 0;  // with a percent: no limit
    fault.percent = 100;
    if (parts.size() >= 3) {
        char* end = nullptr;
        fault.percent = std::strtod(parts[2].c_str(), &end);
        if (parts[2].empty() || end != parts[2].c_str() + parts[2].size() ||
            !(fault.percent > 0 && fault.percent <= 100)) {
            throw std::invalid_argument("fault '" + text +
                                        "': PERCENT must be a number above 0 and at most 100");
        }
    }
    if (parts.size() == 4) {
        const auto n = parse_count(parts[3]);
        if (n && fault.mode == FaultMode::huge) {  // a size, not a time
            fault.bytes = static_cast<std::uint64_t>(*n);
            return fault;
        }
        if (!n || *n > 3'600'000) {
            throw std::invalid_argument("fault '" + text + "': N must be a whole number");
        }
        if (fault.mode == FaultMode::dripping) fault.delay_ms = static_cast<int>(*n);
        if (fault.mode == FaultMode::redirect) fault.redirect_port = static_cast<int>(*n);
        if (fault.mode == FaultMode::slow) fault.delay_ms = static_cast<int>(*n);
        if (fault.mode == FaultMode::rate_limit) fault.retry_after_s = static_cast<int>(*n);
        if (fault.mode == FaultMode::status_error) fault.status_code = static_cast<int>(*n);
        // issue 30, rows
        if (fault.mode == FaultMode::deep || fault.mode == FaultMode::wide ||
            fault.mode == FaultMode::many_resources || fault.mode == FaultMode::ignores_offset)
            fault.size = static_cast<int>(*n);
    }
    return fault;
}

}  // namespace agency::sample
