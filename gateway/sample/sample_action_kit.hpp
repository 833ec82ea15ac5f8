// What the sample's action handlers share (private to gateway/sample/): reading a POST's body,
// the outcome of a call, and the Ctx each handler gets.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gateway/sample/sample_internal.hpp"

namespace agency::sample::detail::actions {

using json = nlohmann::json;

// A body field as text: strings as-is, other scalars in JSON form, absent/null as `fallback`.
inline std::string text_field(const json& body, const char* name, std::string fallback = {}) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return fallback;
    if (it->is_string()) return it->get<std::string>();
    return it->dump();
}

inline std::optional<double> number_field(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (it->is_number()) return it->get<double>();
    if (it->is_string()) {
        const std::string text = it->get<std::string>();
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size()) return value;
    }
    return std::nullopt;
}

inline std::vector<std::string> list_field(const json& body, const char* name) {
    std::vector<std::string> out;
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return out;
    if (it->is_array()) {
        for (const auto& item : *it)
            out.push_back(item.is_string() ? item.get<std::string>() : item.dump());
        return out;
    }
    // A comma-separated string is the other plausible form.
    std::string text = it->is_string() ? it->get<std::string>() : it->dump();
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        std::string part = text.substr(start, comma - start);
        part.erase(0, part.find_first_not_of(' '));
        part.erase(part.find_last_not_of(' ') + 1);
        if (!part.empty()) out.push_back(part);
        start = comma + 1;
    }
    return out;
}

inline ActionOutcome fail(int status, std::string message) {
    ActionOutcome out;
    out.http_status = status;
    out.error = std::move(message);
    return out;
}

inline ActionOutcome ok(ojson data) {
    ActionOutcome out;
    out.data = std::move(data);
    return out;
}

// Everything an action handler needs; one instance per call.
struct Ctx {
    Store& store;
    const ClientProfile& client;
    const json& body;
    const std::string now = iso_time(store.now_seconds());
    const std::string today = iso_date(std::chrono::floor<std::chrono::days>(store.now_seconds()));

    Table& table(const std::string& resource) const { return store.table(resource, client.id); }
    std::string add(const std::string& resource, const ojson& row) const {
        return append_with_id(store, resource, client.id, store.next_id(resource, client.id), row);
    }
    // Outputs depend on the inputs only, so repeating an action reproduces its content.
    Rng rng(std::string_view action) const {
        return Rng(mix_seed(hash_text(body.dump()), client.id, action));
    }
    // Newest row (highest index) whose field equals `value`.
    std::optional<std::size_t> find_by(const std::string& resource, const char* field,
                                       const std::string& value) const {
        const Table& t = table(resource);
        for (std::size_t i = t.size(); i-- > 0;) {
            const ojson row = t.parsed(i);
            auto it = row.find(field);
            if (it != row.end() && it->is_string() && it->get<std::string>() == value) return i;
        }
        return std::nullopt;
    }
    void update(const std::string& resource, std::size_t index, const ojson& row) const {
        table(resource).replace(index, make_row(row));
    }
};

inline ojson pick(const ojson& row, std::initializer_list<const char*> fields) {
    ojson out = ojson::object();
    for (const char* f : fields) {
        if (auto it = row.find(f); it != row.end()) out[f] = *it;
    }
    return out;
}

inline ojson pick(const ojson& row, const std::vector<std::string>& fields) {
    ojson out = ojson::object();
    for (const auto& f : fields) {
        if (auto it = row.find(f); it != row.end()) out[f] = *it;
    }
    return out;
}

// The outreach pair (gateway/sample/sample_outreach.cpp).
ActionOutcome generate_outreach_email(const Ctx& ctx);
ActionOutcome send_prospect_email(const Ctx& ctx);

}  // namespace agency::sample::detail::actions
