// Reads: one GET with the read rules, pages and their walk, and discovery.
#include <simdjson.h>

#include "base/text.hpp"
#include "base/untrusted_text.hpp"
#include "gateway/client_internal.hpp"
#include "gateway/json_parse.hpp"
#include "gateway/page_reader.hpp"
#include "gateway/row_cut.hpp"

namespace agency::gateway {

namespace internal {

namespace {

// Names shown in the warning about names outside the pattern; the rest are counted.
constexpr std::size_t kShownRefusedNames = 5;

// What parse_discovery left out, for the one warning that names each limit reached.
struct Capped {
    std::size_t resources = 0, actions = 0, names = 0, fields = 0, descriptions = 0;
    std::size_t refused = 0;             // names outside the name pattern
    std::vector<std::string> refused_shown;  // the first of them, escaped and quoted

    std::string text() const {
        std::string out;
        const auto add = [&](std::size_t n, std::string what) {
            if (n != 0) out += (out.empty() ? "" : "; ") + std::to_string(n) + " " + what;
        };
        add(resources, "resources past the first " + std::to_string(kMaxDiscoveredResources));
        add(actions, "actions past the first " + std::to_string(kMaxDiscoveredActions));
        add(names, "names longer than " + std::to_string(kMaxDiscoveredName) + " bytes");
        add(fields, "required fields past the first " + std::to_string(kMaxRequiredFields) +
                        " of an action");
        add(descriptions, "action descriptions cut to " +
                              std::to_string(kMaxActionDescription) + " bytes");
        if (refused != 0)
            add(refused, "names outside [a-z0-9][a-z0-9_.-]* (field names: A-Z too): " +
                             base::join(refused_shown) +
                             (refused > refused_shown.size() ? ", ..." : ""));
        return out;
    }
};

// Whether a discovered name may reach a schema, a description or a log as it is: ASCII
// letters (lower case, unless `upper`: a required field such as prospectUrl), digits and
// `_.-`, starting with a letter or digit. Anything else (a line break, markup, a bidi control,
// NUL, a space) could carry words aimed at the model reading tools/list.
bool plain_discovered_name(std::string_view name, bool upper) {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                           (upper && c >= 'A' && c <= 'Z');
        if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
    }
    return true;
}

// A name a list keeps: a string of at most kMaxDiscoveredName bytes that passes
// plain_discovered_name (one it refuses is counted, the first few escaped for the warning).
bool keeps_name(const nlohmann::json& value, Capped& capped, bool upper = false) {
    if (!value.is_string()) return false;
    const auto& name = value.get_ref<const std::string&>();
    if (name.size() > kMaxDiscoveredName) {
        ++capped.names;
        return false;
    }
    if (plain_discovered_name(name, upper)) return true;
    if (capped.refused++ < kShownRefusedNames)
        capped.refused_shown.push_back('"' + base::terminal_safe_text(name) + '"');
    return false;
}

// keeps_name's name, nullopt for one it does not keep.
std::optional<std::string> kept_name(const nlohmann::json& value, Capped& capped,
                                     bool upper = false) {
    if (!keeps_name(value, capped, upper)) return std::nullopt;
    return value.get<std::string>();
}

// An action's description as a model may read it: without invisible characters and hidden
// HTML (the untrusted-text cleaner, which removes C0 and C1 controls but tab and line breaks),
// a tab, line break or line/paragraph separator (U+2028, U+2029) a space: one line.
std::string plain_description(std::string_view text) {
    std::string out = base::clean_untrusted_text(text);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const auto c = static_cast<unsigned char>(out[i]);
        const bool separator = c == 0xE2 && i + 2 < out.size() &&
                               static_cast<unsigned char>(out[i + 1]) == 0x80 &&
                               (static_cast<unsigned char>(out[i + 2]) & 0xFE) == 0xA8;
        if (c < 0x20 || separator) {
            out[kept++] = ' ';
            i += separator ? 2 : 0;
        } else {
            out[kept++] = out[i];
        }
    }
    out.resize(kept);
    return out;
}

// Appends what `read` makes of each element of `list` (nullopt: passed over) to `out`, at most
// `max` of them; the ones past that are counted in `past`.
template <class T, class Read>
void read_capped(const nlohmann::json& list, std::size_t max, std::size_t& past,
                 std::vector<T>& out, Read read) {
    for (const auto& element : list) {
        std::optional<T> item = read(element);
        if (!item) continue;
        if (out.size() == max) {
            ++past;
            continue;
        }
        out.push_back(std::move(*item));
    }
}

std::optional<DiscoveredAction> read_action(const nlohmann::json& entry, Capped& capped) {
    if (!entry.is_object() || !entry.contains("action") || !keeps_name(entry["action"], capped))
        return std::nullopt;
    DiscoveredAction action;
    action.action = entry["action"].get<std::string>();
    if (entry.contains("description") && entry["description"].is_string()) {
        action.description = plain_description(entry["description"].get_ref<const std::string&>());
        if (action.description.size() > kMaxActionDescription) {
            action.description = std::string(utf8_prefix(action.description, kMaxActionDescription));
            ++capped.descriptions;
        }
    }
    if (entry.contains("required_fields") && entry["required_fields"].is_array())
        read_capped(entry["required_fields"], kMaxRequiredFields, capped.fields,
                    action.required_fields,
                    [&](const nlohmann::json& field) { return kept_name(field, capped, true); });
    return action;
}

}  // namespace

std::optional<Discovery> parse_discovery(const std::string& body, std::string& problem,
                                         std::string* left_out) {
    const auto json = parse_json(body);
    if (json.is_discarded()) {
        problem = "the answer is not JSON";
        return std::nullopt;
    }
    if (!json.is_object() || !json.contains("resources") || !json["resources"].is_array() ||
        !json.contains("actions") || !json["actions"].is_array()) {
        problem = "the answer is JSON but has no `resources` and `actions` arrays";
        return std::nullopt;
    }
    Discovery out;
    Capped capped;
    read_capped(json["resources"], kMaxDiscoveredResources, capped.resources, out.resources,
                [&](const nlohmann::json& resource) { return kept_name(resource, capped); });
    read_capped(json["actions"], kMaxDiscoveredActions, capped.actions, out.actions,
                [&](const nlohmann::json& entry) { return read_action(entry, capped); });
    if (left_out) *left_out = capped.text();
    // Optional, not in the spec: the key's scopes, at the top level or under `key`.
    const auto* scopes = json.contains("scopes") ? &json["scopes"] : nullptr;
    if (scopes == nullptr && json.contains("key") && json["key"].is_object() &&
        json["key"].contains("scopes"))
        scopes = &json["key"]["scopes"];
    if (scopes != nullptr && scopes->is_array() && scopes->size() <= 64) {
        std::vector<std::string> names;
        for (const auto& scope : *scopes)
            if (scope.is_string() && scope.get_ref<const std::string&>().size() <= 64)
                names.push_back(scope.get<std::string>());
        out.key_scopes = std::move(names);
    }
    return out;
}

}  // namespace internal

using internal::Exchange;

std::string Client::Impl::read_target(const ReadQuery& q) const {
    std::string target = url.path;
    target += "?resource=";
    detail::append_query_escaped(target, q.resource);
    const auto add = [&](std::string_view name, std::string_view value) {
        target += '&';
        target += name;
        target += '=';
        detail::append_query_escaped(target, value);
    };
    if (!q.client_id.empty()) add("client_id", q.client_id);
    if (q.limit) add("limit", std::to_string(*q.limit));
    if (q.offset) add("offset", std::to_string(*q.offset));
    if (!q.order.empty()) add("order", q.order);
    if (!q.direction.empty()) add("direction", q.direction);
    if (!q.filter_field.empty() || !q.filter_value.empty()) {
        add("filter_field", q.filter_field);
        add("filter_value", q.filter_value);
    }
    return target;
}

std::string Client::Impl::describe_read(const ReadQuery& q) {
    std::string what = "read of " + q.resource;
    if (!q.client_id.empty()) what += " for " + q.client_id;
    return what;
}

Exchange Client::Impl::get(const std::string& target, const std::string& what, std::string& out,
                           const std::stop_token& stop, int max_attempts) {
    Exchange ok;
    const auto started = clock.steady();
    with_retries(max_attempts, what, stop, [&](int attempt, bool last) -> std::optional<Retry> {
        auto ex = perform("GET", target, nullptr, out, config.read_timeout, stop);
        if (stop.stop_requested()) throw cancelled(what);
        if (!ex.over_limit.empty()) {  // not transient: the same read would get the same answer
            const std::string status =
                ex.status != 0 ? " (HTTP " + std::to_string(ex.status) + ")" : "";
            log_line(log::Level::error, "gateway {}{}: {}", what, status, ex.over_limit);
            throw error(ErrorReason::upstream,
                        "the gateway " + what + " failed" + status + ": " + ex.over_limit,
                        ex.status);
        }
        if (ex.ok()) {
            ok = std::move(ex);
            return std::nullopt;
        }
        const auto failure = failure_text(ex, out, config.read_timeout);
        const auto gw_text = safe(internal::gateway_error_text(out));
        if (!is_retryable_status(ex.status)) {
            log_line(log::Level::warn, "gateway {}: {}", what, failure);
            throw error(internal::reason_for_status(ex.status),
                        "the gateway refused the " + what + ": " + failure, ex.status, gw_text);
        }
        if (last) {
            const auto reason = ex.status == 0     ? ErrorReason::unavailable
                                : ex.status == 429 ? ErrorReason::rate_limited
                                                   : ErrorReason::upstream;
            // The real figures: the attempts made and the time they took in all.
            const auto elapsed =
                std::chrono::duration_cast<std::chrono::milliseconds>(clock.steady() - started);
            std::string message = "the gateway " + what + " failed after " +
                                  std::to_string(attempt + 1) + " attempts over " +
                                  ms_text(elapsed) + ": " + failure;
            log_line(log::Level::error, "{}", message);
            nlohmann::json data = nullptr;
            if (ex.status == 0) {
                message += " (gateway at " + url.display + ")";
                data = {{"failure", failure},
                        {"connect_failed", ex.error == httplib::Error::Connection},
                        {"certificate_refused", ex.error == httplib::Error::SSLServerVerification},
                        {"attempts", attempt + 1},
                        {"elapsed_ms", elapsed.count()}};
            }
            throw error(reason, std::move(message), ex.status, gw_text, std::nullopt,
                        std::move(data));
        }
        Retry retry{failure + "; retrying"};
        retry.http_status = ex.status;
        if (ex.status == 429) retry.retry_after = ex.retry_after;
        return retry;
    });
    return ok;
}

Error Client::Impl::bad_page(const std::string& body, const std::string& what, int http_status,
                             WalkProblem problem) const {
    std::string message = "the gateway answered the " + what + " with ";
    message += describe(problem);
    if (!body.empty()) message += ": " + internal::body_excerpt(body);
    log_line(log::Level::error, "gateway: {}", message);
    return error(ErrorReason::upstream, std::move(message), http_status);
}

WalkResult Client::Impl::walk(Page& page, const WalkOptions& options,
                              const RowVisitor& on_row) const {
    WalkResult walked = walk_rows(page.body, options, on_row);
    if (walked.problem != WalkProblem::none)
        throw bad_page(page.body, page.what, page.http_status, walked.problem);
    page.pagination = walked.pagination;
    return walked;
}

Page Client::Impl::read(const ReadQuery& query, const std::stop_token& stop, bool scan) {
    Page page;
    page.what = describe_read(query);
    const auto ex = get(read_target(query), page.what, page.body, stop, config.max_attempts);
    page.http_status = ex.status;
    page.body.reserve(page.body.size() + simdjson::SIMDJSON_PADDING);
    if (scan) walk(page, {}, [](const Row&) { return false; });
    return page;
}

Pagination Client::Impl::for_each_row(ReadQuery query,
                                      const std::function<bool(std::string_view)>& on_row,
                                      const std::stop_token& stop) {
    query.limit = internal::kPageLimit;
    std::int64_t offset = query.offset.value_or(0);
    std::string first_rows;  // how the previous page's rows began
    for (int pages = 0;; ++pages) {
        query.offset = offset;
        if (pages == internal::kMaxScanPages)
            throw error(ErrorReason::upstream,
                        "stopped after reading " + std::to_string(pages) + " pages of the " +
                            describe_read(query) + ": the gateway still says there are more");
        Page page = read(query, stop, false);
        const std::string_view began = rows_begin(page.body);
        if (pages > 0 && !began.empty() && began == first_rows)
            throw error(ErrorReason::upstream,
                        "the gateway answered the " + page.what +
                            " with the rows it gave for the previous page: it ignores offset");
        first_rows.assign(began);
        const WalkResult walked = walk(page, {}, [&](const Row& row) { return on_row(row.json); });
        if (walked.stopped || !page.pagination.present || !page.pagination.has_more ||
            walked.rows == 0) {
            return page.pagination;
        }
        offset += internal::kPageLimit;
    }
}

std::shared_ptr<const Discovery> Client::Impl::fetch_discovery(const std::stop_token& stop,
                                                               int attempts) {
    std::string body;
    internal::Exchange ex;
    try {
        ex = get(url.path, "discovery", body, stop, attempts);
    } catch (const Error& e) {
        // Readiness reports it (discovery_health); a cancelled fetch says nothing of the gateway.
        if (e.reason() != ErrorReason::cancelled) {
            std::lock_guard lock(discovery_mu);
            discovery_failure = e.what();
        }
        throw;
    }
    std::string problem;
    std::string left_out;
    auto parsed = internal::parse_discovery(body, problem, &left_out);
    if (parsed) {
        {
            std::lock_guard lock(discovery_mu);
            if (left_out != discovery_left_out) {
                discovery_left_out = left_out;
                discovery_left_out_pending = !left_out.empty();
            }
        }
        tell_discovery_left_out();
    }
    if (!parsed) {
        log_line(log::Level::error, "gateway discovery at {}: {}", url.display, problem);
        {
            std::lock_guard lock(discovery_mu);
            discovery_failure = "the gateway's discovery answer is malformed: " + problem;
        }
        throw error(ErrorReason::upstream,
                    "the gateway at " + url.display + " answered discovery, but " + problem +
                        ": " + internal::body_excerpt(body),
                    ex.status);
    }
    return std::make_shared<const Discovery>(std::move(*parsed));
}

bool Client::Impl::store_discovery(std::shared_ptr<const Discovery> fresh) {
    std::lock_guard lock(discovery_mu);
    const bool changed = discovery && !(*discovery == *fresh);
    discovery = std::move(fresh);
    discovery_at = clock.steady();
    discovery_failure.clear();
    return changed;
}

void Client::Impl::tell_discovery_left_out() {
    if (!discovery_left_out_pending.load(std::memory_order_relaxed) ||
        log::current_level() > log::Level::warn)
        return;
    std::lock_guard lock(discovery_mu);
    if (!discovery_left_out_pending.exchange(false)) return;
    log_line(log::Level::warn, "gateway discovery at {} lists more than this server keeps; "
                               "left out: {}", url.display, discovery_left_out);
}

std::shared_ptr<const Discovery> Client::Impl::cached_discovery() {
    std::lock_guard lock(discovery_mu);
    // While away, the provisional discovery stands however old (a fetch would fail at once).
    if (discovery && (away.load() || clock.steady() - discovery_at < config.discovery_ttl))
        return discovery;
    return nullptr;
}

}  // namespace agency::gateway
