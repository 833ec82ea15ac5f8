// Room for one more legacy session: one caller (principal, e.g. a key) holds a bounded share of
// the sessions, and when all are open the caller holding the most gives one up, so a caller
// that opens sessions without end cannot keep the others from initializing (issue 30).
#include <algorithm>

#include "base/log.hpp"
#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

// The least recently used session of `principal` (end() when it holds none).
auto least_recent_of(std::unordered_map<std::string, std::shared_ptr<Session>>& sessions,
                     std::string_view principal) {
    auto oldest = sessions.end();
    for (auto it = sessions.begin(); it != sessions.end(); ++it)
        if (it->second->principal.name == principal &&
            (oldest == sessions.end() ||
             it->second->last_used_seq < oldest->second->last_used_seq))
            oldest = it;
    return oldest;
}

}  // namespace

std::vector<std::string> Server::make_room_for_session(const std::string& principal,
                                                       std::size_t max_total,
                                                       std::size_t max_per_principal) {
    std::vector<std::string> closed;
    std::lock_guard lock(impl_->sessions.mutex);
    auto& sessions = impl_->sessions.by_id;
    std::unordered_map<std::string, std::size_t> held;
    for (const auto& [id, s] : sessions) ++held[s->principal.name];
    auto close = [&](const std::string& who) {
        auto it = least_recent_of(sessions, who);
        if (it == sessions.end()) return false;
        closed.push_back(it->first);
        --held[who];
        sessions.erase(it);
        return true;
    };
    const std::size_t per = std::max<std::size_t>(1, max_per_principal);
    while (held[principal] >= per && close(principal)) {
    }
    while (sessions.size() >= std::max<std::size_t>(1, max_total)) {
        // The caller holding the most (the newcomer itself on a tie) gives one up.
        std::string top = principal;
        std::size_t most = held[principal];
        for (const auto& [who, n] : held)
            if (n > most) {
                most = n;
                top = who;
            }
        if (!close(top)) break;
    }
    if (!closed.empty())  // debug: a caller at its bound would write a line per initialize
        log::debug("closed {} least recently used session(s) to open one for a caller holding "
                  "{} (at most {} per caller, {} in all)",
                  closed.size(), held[principal], per, max_total);
    return closed;
}

}  // namespace agency::mcp
