// Which of the agency's clients an OAuth caller may reach, read from its token (issue 35): a
// claim naming the clients (a JSON array of strings or a space-separated string, like `scope`),
// and/or a group claim mapped to clients in a file the operator writes; and the caller's
// action budget from another claim. No I/O: the unit tests and the fuzz target reach it all.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace agency::auth {

// The claims that scope a caller; all off by default (every caller reaches every client).
struct ClientClaimRules {
    std::string clients_claim;          // e.g. "clients"; "" for none
    std::string groups_claim = "groups";  // read only when group_clients is not empty
    // A group's name → the client ids its members reach; "*" among them: every client.
    std::map<std::string, std::vector<std::string>> group_clients;
    // A token that names no client (no clients claim, none of its groups mapped): false, it
    // reaches no client (refused); true, every client.
    bool unclaimed_reaches_all = false;
    std::string budget_claim;  // e.g. "agency_monthly_actions"; "" for none
    bool scoping() const { return !clients_claim.empty() || !group_clients.empty(); }
};

// What a token's claims grant under those rules.
struct ClientReach {
    bool scoped = false;               // false: every client (clients is empty)
    std::vector<std::string> clients;  // sorted, unique; empty and scoped: no client at all
    std::optional<std::int64_t> action_budget;  // nullopt: the server's default
};

// Limits on what a token may name: each client id or group name, and how many.
inline constexpr std::size_t kMaxClaimEntries = 1000;
inline constexpr std::size_t kMaxClaimEntryBytes = 200;

// Reads the reach of a claims object (JSON object). False with `why` (for the caller: names
// the claim and what it must be, never its value) when a configured claim is malformed.
bool read_client_reach(const nlohmann::json& claims, const ClientClaimRules& rules,
                       ClientReach& out, std::string& why);

// The group mapping file: a JSON object {"group": ["client_id", ...] or "*", ...}. Throws
// std::invalid_argument saying what is wrong (and where).
std::map<std::string, std::vector<std::string>> parse_client_groups(std::string_view text);

}  // namespace agency::auth
