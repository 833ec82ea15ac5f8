// The clients and the budget a token's claims grant (see client_claims.hpp).
#include "auth/client_claims.hpp"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace agency::auth {

namespace {

using nlohmann::json;

// A client id or a group name as a claim or the mapping may hold it: 1 to 200 bytes, no
// control characters (they would reach logs and the write log).
bool fit_entry(const std::string& text) {
    if (text.empty() || text.size() > kMaxClaimEntryBytes) return false;
    return std::none_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

// A claim's entries: a JSON array of strings or a space-separated string; false when it is
// anything else, or holds an entry that does not fit, or too many.
bool claim_entries(const json& value, std::vector<std::string>& out) {
    std::vector<std::string> got;
    if (value.is_string()) {
        const std::string& text = value.get_ref<const std::string&>();
        std::size_t at = 0;
        while (at < text.size()) {
            const auto end = std::min(text.find(' ', at), text.size());
            if (end > at) got.push_back(text.substr(at, end - at));
            at = end + 1;
        }
    } else if (value.is_array()) {
        for (const auto& item : value) {
            if (!item.is_string()) return false;
            got.push_back(item.get<std::string>());
        }
    } else {
        return false;
    }
    if (got.size() > kMaxClaimEntries) return false;
    if (!std::all_of(got.begin(), got.end(), fit_entry)) return false;
    out = std::move(got);
    return true;
}

std::string list_shape(const std::string& claim, const char* what) {
    return "the token's '" + claim.substr(0, 100) + "' claim must name " + what +
           ": a JSON array of strings or a space-separated string, at most " +
           std::to_string(kMaxClaimEntries) + " of at most " +
           std::to_string(kMaxClaimEntryBytes) + " bytes each, without control characters";
}

bool read_budget(const json& claims, const std::string& name, ClientReach& out,
                 std::string& why) {
    auto it = claims.find(name);
    if (it == claims.end() || it->is_null()) return true;
    constexpr std::int64_t kMax = 1'000'000'000'000;
    std::int64_t v = -1;
    if (it->is_number_unsigned()) {
        v = it->get<std::uint64_t>() <= static_cast<std::uint64_t>(kMax)
                ? static_cast<std::int64_t>(it->get<std::uint64_t>())
                : -1;
    } else if (it->is_number_integer()) {
        v = it->get<std::int64_t>();
    } else if (it->is_string()) {
        // Some providers write every custom attribute as text.
        const std::string& s = it->get_ref<const std::string&>();
        if (!s.empty() && s.size() <= 13 && s.find_first_not_of("0123456789") == std::string::npos)
            v = std::stoll(s);
    }
    if (v < 0 || v > kMax) {
        why = "the token's '" + name.substr(0, 100) +
              "' claim must be a whole number of actions (0 or more)";
        return false;
    }
    out.action_budget = v;
    return true;
}

}  // namespace

bool read_client_reach(const json& claims, const ClientClaimRules& rules, ClientReach& out,
                       std::string& why) {
    out = ClientReach{};
    if (!claims.is_object()) {
        why = "the token's claims are not an object";
        return false;
    }
    if (!rules.budget_claim.empty() && !read_budget(claims, rules.budget_claim, out, why))
        return false;
    if (!rules.scoping()) return true;
    std::vector<std::string> reach;
    bool named = false;  // a clients claim, or a group in the mapping
    bool every = false;
    if (!rules.clients_claim.empty()) {
        auto it = claims.find(rules.clients_claim);
        if (it != claims.end()) {
            std::vector<std::string> ids;
            if (!claim_entries(*it, ids)) {
                why = list_shape(rules.clients_claim, "client ids");
                return false;
            }
            named = true;
            for (auto& id : ids) {
                if (id == "*") every = true;
                else reach.push_back(std::move(id));
            }
        }
    }
    if (!rules.group_clients.empty()) {
        auto it = claims.find(rules.groups_claim);
        if (it != claims.end()) {
            std::vector<std::string> groups;
            if (!claim_entries(*it, groups)) {
                why = list_shape(rules.groups_claim, "groups");
                return false;
            }
            for (const auto& group : groups) {
                auto mapped = rules.group_clients.find(group);
                if (mapped == rules.group_clients.end()) continue;  // groups of other systems
                named = true;
                for (const auto& id : mapped->second) {
                    if (id == "*") every = true;
                    else reach.push_back(id);
                }
            }
        }
    }
    if (every || (!named && rules.unclaimed_reaches_all)) return true;
    std::sort(reach.begin(), reach.end());
    reach.erase(std::unique(reach.begin(), reach.end()), reach.end());
    out.scoped = true;
    out.clients = std::move(reach);
    return true;
}

std::map<std::string, std::vector<std::string>> parse_client_groups(std::string_view text) {
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object())
        throw std::invalid_argument(
            "the client groups must be a JSON object: {\"group\": [\"client_id\", ...] or \"*\", ...}");
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [group, value] : doc.items()) {
        const std::string where = "group \"" + group.substr(0, 100) + "\"";
        if (!fit_entry(group))
            throw std::invalid_argument("a group's name must be 1 to 200 bytes without control "
                                        "characters: " + where);
        std::vector<std::string> ids;
        if (value.is_string() && value.get<std::string>() == "*") {
            ids.push_back("*");
        } else if (value.is_array()) {
            for (const auto& id : value) {
                if (!id.is_string() || !fit_entry(id.get<std::string>()) ||
                    id.get<std::string>().find(' ') != std::string::npos)
                    throw std::invalid_argument(where + ": each client id must be a string of 1 "
                                                        "to 200 bytes without spaces or control "
                                                        "characters");
                ids.push_back(id.get<std::string>());
            }
        } else {
            throw std::invalid_argument(where + ": want a list of client ids, or \"*\" for "
                                                "every client");
        }
        out.emplace(group, std::move(ids));
    }
    return out;
}

}  // namespace agency::auth
