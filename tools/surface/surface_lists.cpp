// What the resources, prompts and completion share: the short-lived lists read from the
// gateway, reading a page's rows, and the one door for gateway free text.
#include <algorithm>
#include <set>

#include "base/untrusted_text.hpp"
#include "tools/surface/surface.hpp"

namespace agency::tools {

std::string gateway_text(std::string text) {
    if (!base::holds_hidden_text(text)) return text;
    return base::clean_untrusted_text(text);
}

// Through the JSON cleaner (the read path's), which keeps the values of id members exact:
// a resource's ids are passed back by later calls.
void gateway_strings(json& value) {
    if (!value.is_structured()) {
        if (value.is_string()) value = gateway_text(value.get<std::string>());
        return;
    }
    std::string text = value.dump();
    if (base::clean_untrusted_json(text)) value = json::parse(text);
}

gateway::ReadQuery ordered(const std::string& resource, const std::string& client_id, int limit,
                           const std::string& order, bool ascending) {
    return {.resource = resource,
            .client_id = client_id,
            .limit = limit,
            .order = order,
            .direction = ascending ? "asc" : "desc"};
}

json read_rows(Toolbox& box, const gateway::ReadQuery& query, std::stop_token stop,
               std::int64_t* total) {
    gateway::Page page = box.gateway().read(query, stop);
    json body = json::parse(page.body, nullptr, false);
    if (total) *total = page.pagination.present ? page.pagination.total : 0;
    if (!body.is_object() || !body.contains("data") || !body["data"].is_array())
        throw gateway::Error(gateway::ErrorReason::upstream,
                             "the gateway's " + query.resource + " answer holds no data list");
    return std::move(body["data"]);
}

mcp::RpcError resource_not_found(const mcp::RequestContext& ctx, const std::string& uri,
                                 const std::string& why) {
    const int code = ctx.era == mcp::Era::legacy ? mcp::error_code::resource_not_found_legacy
                                                 : mcp::error_code::invalid_params;
    return mcp::RpcError(code, "resource not found: " + uri + " (" + why + ")", {{"uri", uri}});
}

SurfaceLists::SurfaceLists(std::shared_ptr<Toolbox> box, std::chrono::seconds ttl)
    : box_(std::move(box)), ttl_(ttl) {}

std::vector<SurfaceLists::Client> SurfaceLists::clients(std::stop_token stop) {
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        if (!clients_.empty() && now - clients_at_ < ttl_) return clients_;
    }
    std::vector<Client> out;
    for (std::int64_t offset = 0; offset < kClientPages * 1000; offset += 1000) {
        std::int64_t total = 0;
        json rows = read_rows(*box_, {.resource = "clients", .limit = 1000, .offset = offset}, stop,
                              &total);
        for (const json& row : rows) {
            if (!row.is_object()) continue;
            const json& id = row.contains("id") ? row["id"] : row.value("client_id", json());
            if (!id.is_string() && !id.is_number()) continue;
            std::string name = row.value("name", row.value("business_name", std::string()));
            out.push_back({id.is_string() ? id.get<std::string>() : id.dump(),
                           gateway_text(std::move(name))});
        }
        if (rows.size() < 1000 || offset + 1000 >= total) break;
    }
    std::lock_guard lock(mutex_);
    clients_ = out;
    clients_at_ = now;
    return out;
}

bool SurfaceLists::clients_cached() const {
    std::lock_guard lock(mutex_);
    return !clients_.empty() && std::chrono::steady_clock::now() - clients_at_ < ttl_;
}

bool SurfaceLists::cached_now(const std::string& list, const std::string& client_id) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(list + "\x1f" + client_id);
    return it != entries_.end() && std::chrono::steady_clock::now() - it->second.at < ttl_;
}

std::vector<std::string> SurfaceLists::cached(
    const std::string& key, const std::function<std::vector<std::string>()>& read) {
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it != entries_.end() && now - it->second.at < ttl_) return it->second.values;
        if (entries_.size() > 256) entries_.clear();  // a bound, not an eviction policy
    }
    std::vector<std::string> values = read();
    std::lock_guard lock(mutex_);
    entries_[key] = {now, values};
    return values;
}

namespace {

// The string (or number) members `field` of `rows`, distinct, in the rows' order.
std::vector<std::string> distinct(const json& rows, const char* field) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const json& row : rows) {
        if (!row.is_object() || !row.contains(field)) continue;
        const json& v = row[field];
        std::string text = v.is_string() ? v.get<std::string>() : v.is_number() ? v.dump() : "";
        if (!text.empty() && seen.insert(text).second) out.push_back(gateway_text(text));
    }
    return out;
}

}  // namespace

std::vector<std::string> SurfaceLists::keywords(const std::string& client_id,
                                                std::stop_token stop) {
    return cached("keywords\x1f" + client_id, [&] {
        return distinct(read_rows(*box_, ordered("keywords", client_id, 1000, "tracked_at"), stop),
                        "keyword");
    });
}

std::vector<std::string> SurfaceLists::report_ids(const std::string& client_id,
                                                  std::stop_token stop) {
    return cached("reports\x1f" + client_id, [&] {
        return distinct(
            read_rows(*box_, ordered("seo_reports", client_id, 100, "created_at"), stop), "id");
    });
}

std::vector<std::string> SurfaceLists::article_ids(const std::string& client_id,
                                                   std::stop_token stop) {
    return cached("articles\x1f" + client_id, [&] {
        std::vector<std::string> ids;
        for (const char* resource : {"blogs", "geo_articles"}) {
            auto some = distinct(
                read_rows(*box_, ordered(resource, client_id, 100, "created_at"), stop), "id");
            ids.insert(ids.end(), some.begin(), some.end());
        }
        return ids;
    });
}

}  // namespace agency::tools
