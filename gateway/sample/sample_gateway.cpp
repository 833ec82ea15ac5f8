// The sample gateway's HTTP surface: discovery, reads, actions, keyed-mode auth, fault
// injection, the request log, the loopback-only control path, and the background Server.
#include "gateway/sample/sample_gateway.hpp"

#include <httplib.h>

#include <atomic>
#include <deque>
#include <map>
#include <set>
#include <shared_mutex>
#include <cstdlib>
#include <stdexcept>
#include <random>
#include <thread>
#include <unordered_map>

#include "gateway/sample/sample_internal.hpp"
#include "server/socket_stream.hpp"

namespace agency::sample {

using detail::ojson;
using json = nlohmann::json;

namespace {

constexpr std::size_t kMaxLogEntries = 200'000;  // bounds memory under long benchmarks
constexpr int kServerThreads = 32;               // requests served at once

std::string join(const auto& items) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += ", ";
        out += item;
    }
    return out;
}

const char* mode_name(FaultMode mode) {
    switch (mode) {
        case FaultMode::fail_before:
            return "fail_before";
        case FaultMode::fail_after:
            return "fail_after";
        case FaultMode::status_error:
            return "status_error";
        case FaultMode::rate_limit:
            return "rate_limit";
        case FaultMode::slow:
            return "slow";
        case FaultMode::drop:
            return "drop";
        case FaultMode::reset:
            return "reset";
    }
    return "unknown";
}

std::optional<FaultMode> mode_from_name(std::string_view name) {
    for (auto mode : {FaultMode::fail_before, FaultMode::fail_after, FaultMode::status_error,
                      FaultMode::rate_limit, FaultMode::slow, FaultMode::drop,
                      FaultMode::reset}) {
        if (name == mode_name(mode)) return mode;
    }
    return std::nullopt;
}

// What one request on the base path produced, before it is written to the socket.
struct Reply {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    bool drop = false;
    bool cut_before_body = false;  // reset: not one byte of the body
    std::string target;
    std::string client_id;
    std::string fault;
};

Reply error_reply(int status, std::string_view message) {
    Reply r;
    r.status = status;
    r.body = "{\"error\":" + detail::json_quote(message) + "}";
    return r;
}

// Strict non-negative integer: digits only, no sign, no spaces, at most 18 digits.
std::optional<std::int64_t> parse_count(const std::string& text) {
    if (text.empty() || text.size() > 18) return std::nullopt;
    std::int64_t value = 0;
    for (char ch : text) {
        if (ch < '0' || ch > '9') return std::nullopt;
        value = value * 10 + (ch - '0');
    }
    return value;
}

bool is_loopback(const std::string& addr) {
    return addr == "127.0.0.1" || addr == "::1" || addr == "::ffff:127.0.0.1";
}

std::string query_of(const httplib::Request& req) {
    const auto q = req.target.find('?');
    return q == std::string::npos ? std::string() : req.target.substr(q + 1);
}

}  // namespace

struct Gateway::Impl {
    explicit Impl(Options opts) : options(std::move(opts)) {
        detail::generate_sample_data(store, options);
        store.bare_records = options.bare_records;
        resource_list = join(store.resources);
        build_discovery();
    }

    Options options;

    mutable std::shared_mutex data_mutex;  // guards store
    detail::Store store;
    std::string resource_list;
    mutable std::mutex discovery_mutex;  // guards the three below (actions can be withdrawn)
    std::string discovery_body;
    std::string action_list;
    std::set<std::string> withdrawn;  // actions this deployment no longer offers

    mutable std::mutex auth_mutex;
    bool keyed = false;
    std::map<std::string, ApiKey> keys;
    std::map<std::string, std::set<std::string>> client_agencies;

    std::mutex fault_mutex;
    std::deque<Fault> faults;
    std::mt19937_64 fault_rng{0x5eed};  // percent faults; guarded by fault_mutex

    // Stats (guarded by log_mutex, like the log).
    Stats stats;
    std::unordered_map<std::uint64_t, std::uint32_t> executed_bodies;
    static constexpr std::size_t kMaxExamples = 5;

    // The work of an action ran: counted, and a repeat of one body noted (retry-safe actions
    // excepted, spec rule 2).
    void note_execution(const std::string& action, const json& body) {
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

    mutable std::mutex log_mutex;
    std::deque<LoggedRequest> log;

    void build_discovery() {
        std::lock_guard lock(discovery_mutex);
        std::vector<std::string_view> names;
        ojson actions = ojson::array();
        for (const auto& action : detail::action_catalog()) {
            if (withdrawn.count(std::string(action.name))) continue;
            names.push_back(action.name);
            ojson required = ojson::array();
            for (auto field : action.required) required.push_back(field);
            actions.push_back({{"action", action.name},
                               {"description", action.description},
                               {"required_fields", required}});
        }
        action_list = join(names);
        discovery_body = ojson{{"resources", store.resources}, {"actions", actions}}.dump();
    }

    // ---- auth ----

    struct Caller {
        bool keyed = false;
        std::string agency;
    };

    // Explorer mode ignores the header; keyed mode needs a live key with `scope`.
    std::optional<Reply> authenticate(const httplib::Request& req, const std::string& scope,
                                      Caller& caller) const {
        std::lock_guard lock(auth_mutex);
        if (!keyed) return std::nullopt;
        caller.keyed = true;
        const std::string header = req.get_header_value("Authorization");
        if (header.empty()) {
            return error_reply(401,
                               "missing API key: send the header Authorization: Bearer <API_KEY>");
        }
        constexpr std::string_view kBearer = "bearer ";
        if (header.size() <= kBearer.size() ||
            detail::lower(header.substr(0, kBearer.size())) != kBearer) {
            return error_reply(401, "malformed Authorization header: expected 'Bearer <API_KEY>'");
        }
        std::string key = header.substr(kBearer.size());
        key.erase(0, key.find_first_not_of(' '));
        key.erase(key.find_last_not_of(' ') + 1);
        auto it = keys.find(key);
        if (it == keys.end()) {
            return error_reply(401,
                               "invalid API key: it is not recognised or was revoked; check "
                               "the key in the agency's app settings");
        }
        if (it->second.expired) {
            return error_reply(401, "API key expired: regenerate it in the agency's app settings");
        }
        const auto& scopes = it->second.scopes;
        if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) {
            return error_reply(403, "API key lacks the '" + scope + "' scope needed for " +
                                        (scope == "read" ? "GET reads" : "POST actions") +
                                        "; key scopes: " + join(scopes));
        }
        caller.agency = it->second.agency;
        return std::nullopt;
    }

    bool linked(const std::string& client_id, const std::string& agency) const {
        std::lock_guard lock(auth_mutex);
        auto it = client_agencies.find(client_id);
        return it != client_agencies.end() && it->second.count(agency) > 0;
    }

    // 403 when the key's agency cannot reach the client, 404 when the client does not exist.
    std::optional<Reply> check_client(const std::string& client_id, const Caller& caller) const {
        if (caller.keyed && !linked(client_id, caller.agency)) {
            return error_reply(403, "client_id " + client_id +
                                        " is not linked to this key's agency (" + caller.agency +
                                        "); read resource=clients for reachable "
                                        "clients, or regenerate the key after linking");
        }
        if (!store.clients.count(client_id)) {
            return error_reply(
                404, "unknown client_id " + client_id + "; read resource=clients for valid ids");
        }
        return std::nullopt;
    }

    // ---- faults ----

    std::optional<Fault> take_fault(const std::string& target) {
        std::lock_guard lock(fault_mutex);
        for (auto it = faults.begin(); it != faults.end(); ++it) {
            if (it->target != "*" && it->target != target) continue;
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

    // Runs `work` under whatever fault the next matching request is due.
    template <class Work, class StatusError>
    Reply with_fault(const std::string& target, Work&& work, StatusError&& status_error) {
        const auto fault = take_fault(target);
        if (!fault) return work();
        Reply reply;
        switch (fault->mode) {
            case FaultMode::fail_before:
                reply = error_reply(500,
                                    "internal server error (injected fail_before fault); "
                                    "nothing was done, retry with backoff");
                break;
            case FaultMode::rate_limit:
                reply = error_reply(429, "rate limited (injected fault); retry after " +
                                             std::to_string(fault->retry_after_s) + " s");
                reply.headers.emplace_back("Retry-After", std::to_string(fault->retry_after_s));
                break;
            case FaultMode::status_error:
                reply = status_error(fault->status_code);
                break;
            case FaultMode::slow:
                std::this_thread::sleep_for(std::chrono::milliseconds(fault->delay_ms));
                reply = work();
                break;
            case FaultMode::fail_after:
                work();
                reply = error_reply(500,
                                    "internal server error after the work ran (injected "
                                    "fail_after fault)");
                break;
            case FaultMode::drop:
                reply = work();
                reply.drop = true;
                break;
            case FaultMode::reset:
                reply = error_reply(500, "reset (injected fault); nothing was done");
                reply.drop = true;
                reply.cut_before_body = true;
                break;
        }
        reply.fault = mode_name(fault->mode);
        return reply;
    }

    // ---- reads ----

    Reply read(const httplib::Request& req, const Caller& caller) {
        auto param = [&](const char* name) -> std::optional<std::string> {
            if (!req.has_param(name)) return std::nullopt;
            return req.get_param_value(name);
        };
        const auto resource = param("resource");
        if (!resource) {
            return error_reply(
                400, "missing required parameter 'resource'; allowed resources: " + resource_list);
        }
        if (!store.has_resource(*resource)) {
            return error_reply(
                400, "unknown resource '" + *resource + "'; allowed resources: " + resource_list);
        }
        const bool is_clients = *resource == "clients";
        const std::string client_id = param("client_id").value_or("");
        if (!is_clients && client_id.empty()) {
            return error_reply(400, "missing required parameter 'client_id' for resource '" +
                                        *resource + "'; get client ids from resource=clients");
        }

        detail::ReadParams params;
        if (auto v = param("limit")) {
            const auto n = parse_count(*v);
            if (!n || *n < 1 || *n > 1000) {
                return error_reply(400, "invalid limit '" + *v +
                                            "': must be an integer from 1 to 1000 (default 100)");
            }
            params.limit = static_cast<int>(*n);
        }
        if (auto v = param("offset")) {
            const auto n = parse_count(*v);
            if (!n) {
                return error_reply(400, "invalid offset '" + *v +
                                            "': must be an integer of 0 or more (default 0)");
            }
            params.offset = *n;
        }
        if (auto v = param("order")) {
            if (std::find(detail::kOrderFields.begin(), detail::kOrderFields.end(), *v) ==
                detail::kOrderFields.end()) {
                return error_reply(400, "invalid order '" + *v + "'; allowed order fields: " +
                                            join(detail::kOrderFields));
            }
            params.order = detail::key_field_index(*v);
        }
        if (auto v = param("direction")) {
            if (*v != "asc" && *v != "desc") {
                return error_reply(400, "invalid direction '" + *v +
                                            "'; allowed values: asc, desc (default desc)");
            }
            params.descending = *v == "desc";
        }
        const auto filter_field = param("filter_field");
        const auto filter_value = param("filter_value");
        if (filter_field) {
            if (std::find(detail::kFilterFields.begin(), detail::kFilterFields.end(),
                          *filter_field) == detail::kFilterFields.end()) {
                return error_reply(400,
                                   "invalid filter_field '" + *filter_field +
                                       "'; allowed filter fields: " + join(detail::kFilterFields));
            }
            if (!filter_value) {
                return error_reply(400, "filter_field '" + *filter_field +
                                            "' needs a filter_value (exact match); allowed filter "
                                            "fields: " +
                                            join(detail::kFilterFields));
            }
            params.filter_field = detail::key_field_index(*filter_field);
            params.filter_value = *filter_value;
        } else if (filter_value) {
            return error_reply(400, "filter_value needs a filter_field; allowed filter fields: " +
                                        join(detail::kFilterFields));
        }

        std::vector<std::string> visible;
        if (is_clients) {
            if (caller.keyed) {
                std::lock_guard lock(auth_mutex);
                for (const auto& [id, agencies] : client_agencies) {
                    if (agencies.count(caller.agency)) visible.push_back(id);
                }
            }
        } else if (auto denied = check_client(client_id, caller)) {
            return *denied;
        }

        return with_fault(
            *resource,
            [&] {
                Reply reply;
                reply.body.reserve(static_cast<std::size_t>(params.limit) * 256 + 256);
                reply.body += "{\"resource\":" + detail::json_quote(*resource);
                if (!is_clients) reply.body += ",\"client_id\":" + detail::json_quote(client_id);
                reply.body += ',';
                std::shared_lock lock(data_mutex);
                static const detail::Table kEmpty;
                const detail::Table* table =
                    is_clients ? &store.client_rows : store.find_table(*resource, client_id);
                (table ? *table : kEmpty)
                    .write_page(reply.body, params,
                                caller.keyed && is_clients ? &visible : nullptr);
                reply.body += '}';
                return reply;
            },
            [&](int status_code) {
                return error_reply(status_code,
                                   "upstream data source failed (injected "
                                   "status_error fault); retry with backoff");
            });
    }

    // ---- actions ----

    Reply act(const json& body, const Caller& caller) {
        const auto action_it = body.find("action");
        if (action_it == body.end() || !action_it->is_string() ||
            action_it->get<std::string>().empty()) {
            std::lock_guard lock(discovery_mutex);
            return error_reply(
                400, "missing required field 'action'; available actions: " + action_list);
        }
        const std::string name = action_it->get<std::string>();
        const detail::ActionInfo* action = detail::find_action(name);
        bool offered = action != nullptr;
        std::string available;
        {
            std::lock_guard lock(discovery_mutex);
            offered = offered && !withdrawn.count(name);
            available = action_list;
        }
        if (!offered) {
            return error_reply(400,
                               "unknown action '" + name + "'; available actions: " + available);
        }
        const auto client_it = body.find("client_id");
        if (client_it == body.end() || !client_it->is_string() ||
            client_it->get<std::string>().empty()) {
            return error_reply(400,
                               "missing required field 'client_id'; get client ids from "
                               "GET ?resource=clients");
        }
        const std::string client_id = client_it->get<std::string>();
        std::vector<std::string_view> missing;
        for (auto field : action->required) {
            auto it = body.find(field);
            if (it == body.end() || it->is_null() ||
                (it->is_string() && it->get<std::string>().empty())) {
                missing.push_back(field);
            }
        }
        if (!missing.empty()) {
            return error_reply(400, "missing required field" +
                                        std::string(missing.size() > 1 ? "s " : " ") +
                                        join(missing) + " for action " + name +
                                        "; required fields: " + join(action->required));
        }
        if (auto denied = check_client(client_id, caller)) return *denied;

        auto respond = [&](const char* status, int status_code, const ojson& data) {
            Reply reply;
            reply.body = ojson{
                {"action", name},
                {"client_id", client_id},
                {"status", status},
                {"status_code", status_code},
                {"data",
                 data}}.dump(-1, ' ', false, json::error_handler_t::replace);
            return reply;
        };
        return with_fault(
            name,
            [&] {
                detail::ActionOutcome outcome;
                {
                    std::unique_lock lock(data_mutex);
                    outcome = detail::run_action(store, *action, store.clients.at(client_id), body);
                }
                if (outcome.http_status == 200) note_execution(name, body);
                if (outcome.http_status != 200)
                    return error_reply(outcome.http_status, outcome.error);
                return respond("success", 200, outcome.data);
            },
            [&](int status_code) {
                return respond("error", status_code,
                               {{"error",
                                 "upstream provider failed (injected status_error "
                                 "fault); nothing was created or billed"}});
            });
    }

    // ---- dispatch ----

    static std::string param_or_empty(const httplib::Request& req, const char* name) {
        return req.has_param(name) ? req.get_param_value(name) : std::string();
    }

    Reply discover() {
        return with_fault(
            "",
            [&] {
                Reply reply;
                std::lock_guard lock(discovery_mutex);
                reply.body = discovery_body;
                return reply;
            },
            [&](int status_code) {
                return error_reply(status_code, "discovery failed (injected status_error fault)");
            });
    }

    Reply handle(const httplib::Request& req) {
        Caller caller;
        if (req.method == "GET" || req.method == "HEAD") {
            const bool discovery = req.params.empty();
            const std::string target = discovery ? "" : param_or_empty(req, "resource");
            Reply out;
            if (auto denied = authenticate(req, "read", caller)) {
                out = *denied;
            } else {
                out = discovery ? discover() : read(req, caller);
            }
            out.target = target;
            out.client_id = param_or_empty(req, "client_id");
            return out;
        }
        if (req.method == "POST") {
            json body;
            std::string parse_error;
            try {
                body = json::parse(req.body);
            } catch (const json::parse_error& e) {
                parse_error = e.what();
            }
            std::string target;
            std::string client_id;
            if (body.is_object()) {
                if (auto it = body.find("action"); it != body.end() && it->is_string())
                    target = *it;
                if (auto it = body.find("client_id"); it != body.end() && it->is_string())
                    client_id = *it;
            }
            Reply out;
            if (auto denied = authenticate(req, "write", caller)) {
                out = *denied;
            } else if (!parse_error.empty()) {
                out = error_reply(400, "malformed JSON body: " + parse_error +
                                           "; send {\"action\": ..., \"client_id\": ..., fields}");
            } else if (!body.is_object()) {
                out = error_reply(400,
                                  "the body must be a JSON object {\"action\": ..., "
                                  "\"client_id\": ..., fields}");
            } else {
                out = act(body, caller);
            }
            out.target = target;
            out.client_id = client_id;
            return out;
        }
        Reply out = error_reply(
            405, "method " + req.method + " not allowed: use GET to read and POST to run actions");
        out.headers.emplace_back("Allow", "GET, POST");
        return out;
    }

    void record(const httplib::Request& req, const Reply& reply) {
        LoggedRequest entry;
        entry.method = req.method;
        entry.target = reply.target;
        entry.client_id = reply.client_id;
        entry.detail = req.method == "POST" ? req.body : query_of(req);
        entry.status = reply.drop ? 0 : reply.status;
        entry.fault = reply.fault;
        entry.at = std::chrono::system_clock::now();
        std::lock_guard lock(log_mutex);
        if (entry.method == "POST")
            ++stats.posts[entry.target];
        else
            ++stats.gets;
        if (!entry.fault.empty()) ++stats.faults[entry.fault];
        log.push_back(std::move(entry));
        if (log.size() > kMaxLogEntries) log.pop_front();
    }

    void serve(const httplib::Request& req, httplib::Response& res) {
        Reply reply;
        try {
            reply = handle(req);
        } catch (const std::exception& e) {
            reply = error_reply(500, std::string("internal error: ") + e.what());
        }
        record(req, reply);
        res.status = reply.status;
        for (const auto& [name, value] : reply.headers) res.set_header(name, value);
        // A sized content provider keeps httplib from compressing pages (brotli at its default
        // quality costs far more than the read itself), and lets `drop` cut the body short.
        auto body = std::make_shared<const std::string>(std::move(reply.body));
        if (reply.drop) {
            const std::size_t sent = reply.cut_before_body ? 0 : body->size() / 2;
            res.set_content_provider(
                body->size(), "application/json",
                [body, sent](std::size_t, std::size_t, httplib::DataSink& sink) {
                    if (sent > 0) sink.write(body->data(), sent);
                    return false;  // closes the connection mid-body
                });
        } else {
            res.set_content_provider(
                body->size(), "application/json",
                [body](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                    return sink.write(body->data() + offset, length);
                });
        }
    }

    // ---- control path ----

    static void control_json(httplib::Response& res, int status, const json& body) {
        res.status = status;
        res.set_content(body.dump(), "application/json");
    }

    void add_fault_from(const httplib::Request& req, httplib::Response& res) {
        json body;
        try {
            body = json::parse(req.body);
        } catch (const json::parse_error& e) {
            return control_json(res, 400,
                                {{"error", std::string("malformed JSON body: ") + e.what()}});
        }
        const std::string modes =
            "fail_before, fail_after, status_error, rate_limit, slow, drop, reset";
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
        } catch (const json::exception&) {
            return control_json(res, 400,
                                {{"error",
                                  "count, status_code, retry_after_s and "
                                  "delay_ms must be integers, percent a number"}});
        }
        if (!(fault.percent >= 0 && fault.percent <= 100)) {
            return control_json(res, 400, {{"error", "percent must be from 0 to 100"}});
        }
        inject(std::move(fault));
        control_json(res, 200, {{"ok", true}});
    }

    void inject(Fault fault) {
        if (fault.count <= 0 && fault.percent <= 0) return;
        std::lock_guard lock(fault_mutex);
        faults.push_back(std::move(fault));
    }

    json stats_json() const {
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

    json log_json() const {
        json out = json::array();
        std::lock_guard lock(log_mutex);
        for (const auto& e : log) {
            out.push_back(
                {{"method", e.method},
                 {"target", e.target},
                 {"client_id", e.client_id},
                 {"detail", e.detail},
                 {"status", e.status},
                 {"fault", e.fault},
                 {"at", detail::iso_time(std::chrono::floor<std::chrono::seconds>(e.at))}});
        }
        return out;
    }
};

Fault parse_fault(const std::string& text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const auto colon = text.find(':', start);
        parts.push_back(text.substr(start, colon - start));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    const std::string shape = "expected TARGET:MODE[:PERCENT[:N]], e.g. '*:fail_after:1' or "
                              "'generate_blog:slow:5:4000'";
    if (parts.size() < 2 || parts.size() > 4)
        throw std::invalid_argument("fault '" + text + "': " + shape);
    Fault fault;
    fault.target = parts[0];
    const auto mode = mode_from_name(parts[1]);
    if (!mode) {
        throw std::invalid_argument("fault '" + text + "': unknown mode '" + parts[1] +
                                    "'; modes: fail_before, fail_after, status_error, "
                                    "rate_limit, slow, drop, reset");
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
        if (!n || *n > 3'600'000) {
            throw std::invalid_argument("fault '" + text + "': N must be a whole number");
        }
        if (fault.mode == FaultMode::slow) fault.delay_ms = static_cast<int>(*n);
        if (fault.mode == FaultMode::rate_limit) fault.retry_after_s = static_cast<int>(*n);
        if (fault.mode == FaultMode::status_error) fault.status_code = static_cast<int>(*n);
    }
    return fault;
}

Gateway::Gateway(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Gateway::~Gateway() = default;

void Gateway::set_keyed(bool keyed) {
    std::lock_guard lock(impl_->auth_mutex);
    impl_->keyed = keyed;
}

void Gateway::add_key(ApiKey key) {
    std::lock_guard lock(impl_->auth_mutex);
    const std::string name = key.key;
    impl_->keys[name] = std::move(key);
}

void Gateway::link_client(const std::string& client_id, const std::string& agency) {
    std::lock_guard lock(impl_->auth_mutex);
    impl_->client_agencies[client_id].insert(agency);
}

void Gateway::inject(Fault fault) { impl_->inject(std::move(fault)); }

void Gateway::clear_faults() {
    std::lock_guard lock(impl_->fault_mutex);
    impl_->faults.clear();
}

std::vector<LoggedRequest> Gateway::request_log() const {
    std::lock_guard lock(impl_->log_mutex);
    return {impl_->log.begin(), impl_->log.end()};
}

std::size_t Gateway::count_requests(const std::string& method, const std::string& target) const {
    std::lock_guard lock(impl_->log_mutex);
    return static_cast<std::size_t>(std::count_if(
        impl_->log.begin(), impl_->log.end(),
        [&](const LoggedRequest& e) { return e.method == method && e.target == target; }));
}

Stats Gateway::stats() const {
    std::lock_guard lock(impl_->log_mutex);
    return impl_->stats;
}

void Gateway::clear_log() {
    std::lock_guard lock(impl_->log_mutex);
    impl_->log.clear();
    impl_->stats = Stats{};
    impl_->executed_bodies.clear();
}

nlohmann::json Gateway::rows(const std::string& resource, const std::string& client_id) const {
    std::shared_lock lock(impl_->data_mutex);
    const auto& store = impl_->store;
    const detail::Table* table =
        resource == "clients" ? &store.client_rows : store.find_table(resource, client_id);
    nlohmann::json out = nlohmann::json::array();
    if (!table) return out;
    for (const auto& row : table->rows()) out.push_back(nlohmann::json::parse(row.json));
    return out;
}

void Gateway::set_action_offered(const std::string& action, bool offered) {
    {
        std::lock_guard lock(impl_->discovery_mutex);
        if (offered)
            impl_->withdrawn.erase(action);
        else
            impl_->withdrawn.insert(action);
    }
    impl_->build_discovery();
}

void Gateway::set_bare_records(bool on) {
    std::unique_lock lock(impl_->data_mutex);
    impl_->store.bare_records = on;
}

void Gateway::set_auto_deploy(const std::string& client_id, bool on) {
    std::unique_lock lock(impl_->data_mutex);
    auto& store = impl_->store;
    auto it = store.clients.find(client_id);
    if (it == store.clients.end()) throw std::invalid_argument("unknown client_id " + client_id);
    it->second.auto_deploy = on;
    const auto index = store.client_rows.find(client_id);
    ojson row = store.client_rows.parsed(*index);
    row["auto_deploy"] = on;
    store.client_rows.replace(*index, detail::make_row(row));
}

void Gateway::mount(httplib::Server& server, const std::string& base_path) {
    Impl* impl = impl_.get();
    const std::string pattern = base_path + "/?";
    auto serve = [impl](const httplib::Request& req, httplib::Response& res) {
        impl->serve(req, res);
    };
    server.Get(pattern, serve);
    server.Post(pattern, serve);
    server.Put(pattern, serve);
    server.Patch(pattern, serve);
    server.Delete(pattern, serve);
    server.Options(pattern, serve);

    // Test control: loopback callers only, never logged.
    auto guarded = [](auto handler) {
        return [handler](const httplib::Request& req, httplib::Response& res) {
            if (!is_loopback(req.remote_addr)) {
                return Impl::control_json(res, 403,
                                          {{"error",
                                            "the control path accepts loopback "
                                            "callers only"}});
            }
            handler(req, res);
        };
    };
    server.Post("/_control/faults",
                guarded([impl](const httplib::Request& req, httplib::Response& res) {
                    impl->add_fault_from(req, res);
                }));
    server.Delete("/_control/faults",
                  guarded([impl](const httplib::Request&, httplib::Response& res) {
                      std::lock_guard lock(impl->fault_mutex);
                      impl->faults.clear();
                      Impl::control_json(res, 200, {{"ok", true}});
                  }));
    server.Get("/_control/requests",
               guarded([impl](const httplib::Request&, httplib::Response& res) {
                   Impl::control_json(res, 200, impl->log_json());
               }));
    server.Delete("/_control/requests",
                  guarded([impl](const httplib::Request&, httplib::Response& res) {
                      std::lock_guard lock(impl->log_mutex);
                      impl->log.clear();
                      impl->stats = Stats{};
                      impl->executed_bodies.clear();
                      Impl::control_json(res, 200, {{"ok", true}});
                  }));
    server.Get("/_control/stats",
               guarded([impl](const httplib::Request&, httplib::Response& res) {
                   Impl::control_json(res, 200, impl->stats_json());
               }));
}

// ---- Server ----

struct Server::Impl {
    std::shared_ptr<Gateway> gateway;
    std::unique_ptr<net::PlainServer> http;
    std::thread thread;
    std::string host;
    int port = 0;
};

Server::Server(std::shared_ptr<Gateway> gateway) : impl_(std::make_unique<Impl>()) {
    if (!gateway) throw std::invalid_argument("sample::Server needs a gateway");
    impl_->gateway = std::move(gateway);
}

Server::~Server() { stop(); }

int Server::start(const std::string& host, int port) {
    if (impl_->http) throw std::logic_error("sample::Server already started");
    auto http = std::make_unique<net::PlainServer>();
    net::ConnectionLimits limits;
    limits.threads = kServerThreads;
    http->set_limits(limits);
    http->set_keep_alive_max_count(1000);
    // Small JSON answers would otherwise wait ~40 ms on Nagle + delayed ACK.
    http->set_tcp_nodelay(true);
    // PlainServer's idle connections notice stop() at once, so a pooled gateway client may keep
    // its connection across a pause.
    http->set_keep_alive_timeout(5);
    // httplib's default adds SO_REUSEPORT, which would let a second server share a busy port.
    // It also keeps the listening socket: httplib listens with a backlog of 5, and a burst of
    // new connections beyond that loses SYNs that clients resend only a second later.
    auto listen_fd = std::make_shared<std::atomic<socket_t>>(INVALID_SOCKET);
    http->set_socket_options([listen_fd](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        listen_fd->store(sock);
    });
    impl_->gateway->mount(*http, "/api");
    // Errors httplib answers itself (unknown path, unroutable method, bad request) get the
    // spec's {"error"} body too; a method the base path has no route for is a 405.
    http->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req,
                                                                    httplib::Response& res) {
        if (res.content_provider_ || !res.body.empty())
            return httplib::Server::HandlerResponse::Unhandled;
        std::string message =
            "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path;
        if (res.status == 404 && (req.path == "/api" || req.path == "/api/")) {
            res.status = 405;
            res.set_header("Allow", "GET, POST");
            message =
                "method " + req.method + " not allowed: use GET to read and POST to run actions";
        } else if (res.status == 404) {
            message = "no such path " + req.path + "; the gateway is at /api";
        }
        res.set_content(nlohmann::json{{"error", message}}.dump(
                            -1, ' ', false, nlohmann::json::error_handler_t::replace),
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
    }));
    const int bound =
        port == 0 ? http->bind_to_any_port(host) : (http->bind_to_port(host, port) ? port : -1);
    if (bound < 0) {
        throw std::runtime_error("sample gateway: cannot bind " + host + ":" +
                                 std::to_string(port));
    }
    if (listen_fd->load() != INVALID_SOCKET) ::listen(listen_fd->load(), SOMAXCONN);
    httplib::Server* raw = http.get();
    impl_->thread = std::thread([raw] { raw->listen_after_bind(); });
    // Ready means accepting: wait for the accept loop, so callers can connect at once.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!raw->is_running()) {
        if (std::chrono::steady_clock::now() > deadline) {
            raw->stop();
            impl_->thread.join();
            throw std::runtime_error("sample gateway: server did not start on " + host);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->http = std::move(http);
    impl_->host = host;
    impl_->port = bound;
    return bound;
}

void Server::stop() {
    if (!impl_->http) return;
    impl_->http->stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    impl_->http.reset();
}

std::string Server::base_url() const {
    const std::string host =
        impl_->host.find(':') != std::string::npos ? "[" + impl_->host + "]" : impl_->host;
    return "http://" + host + ":" + std::to_string(impl_->port) + "/api";
}

Gateway& Server::gateway() { return *impl_->gateway; }

}  // namespace agency::sample
