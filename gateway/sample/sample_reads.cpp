// The sample gateway's query parsing, reads (GET) and actions (POST).
#include <httplib.h>

#include "base/text.hpp"
#include "gateway/sample/sample_internal.hpp"

namespace agency::sample {

using detail::ojson;
using json = nlohmann::json;

namespace {

// base::join over any list of strings or string views, ", " between.
template <class Items>
std::string join(const Items& items) {
    return base::join(std::vector<std::string>(std::begin(items), std::end(items)));
}

}  // namespace

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

std::string query_of(const httplib::Request& req) {
    const auto q = req.target.find('?');
    return q == std::string::npos ? std::string() : req.target.substr(q + 1);
}

namespace {

// ignores_offset: the first page, presented as the page at `asked`, with more to come.
void claim_offset(Reply& reply, const Fault& fault, int limit, std::int64_t asked) {
    json page = json::parse(reply.body);
    page["pagination"] = {{"total", std::max<std::int64_t>(fault.size, 1)},
                          {"limit", limit},
                          {"offset", asked},
                          {"has_more", true}};
    reply.body = page.dump();
    reply.fault = mode_name(FaultMode::ignores_offset);
}

}  // namespace

Reply Gateway::Impl::read(const httplib::Request& req, const Caller& caller) {
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
            return error_reply(
                400, "invalid limit '" + *v + "': must be an integer from 1 to 1000 (default 100)");
        }
        params.limit = static_cast<int>(*n);
    }
    if (auto v = param("offset")) {
        const auto n = parse_count(*v);
        if (!n) {
            return error_reply(
                400, "invalid offset '" + *v + "': must be an integer of 0 or more (default 0)");
        }
        params.offset = *n;
    }
    if (auto v = param("order")) {
        if (std::find(detail::kOrderFields.begin(), detail::kOrderFields.end(), *v) ==
            detail::kOrderFields.end()) {
            return error_reply(400, "invalid order '" + *v +
                                        "'; allowed order fields: " + join(detail::kOrderFields));
        }
        params.order = detail::key_field_index(*v);
    }
    if (auto v = param("direction")) {
        if (*v != "asc" && *v != "desc") {
            return error_reply(
                400, "invalid direction '" + *v + "'; allowed values: asc, desc (default desc)");
        }
        params.descending = *v == "desc";
    }
    const auto filter_field = param("filter_field");
    const auto filter_value = param("filter_value");
    if (filter_field) {
        if (std::find(detail::kFilterFields.begin(), detail::kFilterFields.end(), *filter_field) ==
            detail::kFilterFields.end()) {
            return error_reply(400, "invalid filter_field '" + *filter_field +
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

    // A gateway that ignores offset: the first page whatever was asked, presented as the page
    // asked for, with more to come.
    const std::int64_t asked_offset = params.offset;
    const auto ignoring = take_fault(*resource, FaultMode::ignores_offset);
    if (ignoring) params.offset = 0;
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
                .write_page(reply.body, params, caller.keyed && is_clients ? &visible : nullptr);
            reply.body += '}';
            if (ignoring) claim_offset(reply, *ignoring, params.limit, asked_offset);
            return reply;
        },
        [&](int status_code) {
            return error_reply(status_code,
                               "upstream data source failed (injected "
                               "status_error fault); retry with backoff");
        });
}

Reply Gateway::Impl::act(const json& body, const Caller& caller) {
    const auto action_it = body.find("action");
    if (action_it == body.end() || !action_it->is_string() ||
        action_it->get<std::string>().empty()) {
        std::lock_guard lock(discovery_mutex);
        return error_reply(400,
                           "missing required field 'action'; available actions: " + action_list);
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
        return error_reply(400, "unknown action '" + name + "'; available actions: " + available);
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
                                    std::string(missing.size() > 1 ? "s " : " ") + join(missing) +
                                    " for action " + name +
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
            if (outcome.http_status != 200) return error_reply(outcome.http_status, outcome.error);
            return respond("success", 200, outcome.data);
        },
        [&](int status_code) {
            return respond("error", status_code,
                           {{"error",
                             "upstream provider failed (injected status_error "
                             "fault); nothing was created or billed"}});
        });
}

}  // namespace agency::sample
