#include "server/calls_in_flight.hpp"

#include <vector>

#include "server/tool_def.hpp"

namespace agency::mcp {

std::string CallsInFlight::key_of(const Session* session, std::string_view caller, const json& id) {
    std::string key = session ? session->id : std::string();
    key += '\x1f';
    key += caller;
    key += '\x1f';
    key += id.dump();
    return key;
}

CallsInFlight::Call::~Call() {
    std::lock_guard lock(owner_.mutex_);
    // A later call may have taken the key since this one's last holder let go: keep it.
    if (auto it = owner_.calls_.find(key_); it != owner_.calls_.end() && it->second.expired())
        owner_.calls_.erase(it);
}

std::shared_ptr<CallsInFlight::Call> CallsInFlight::enter(const Session* session,
                                                          std::string_view caller, const json& id) {
    std::string key = key_of(session, caller, id);
    std::lock_guard lock(mutex_);
    auto& slot = calls_[key];
    if (auto call = slot.lock()) return call;
    auto call = std::make_shared<Call>(*this, std::move(key));
    slot = call;
    return call;
}

void CallsInFlight::cancel(const Session* session, std::string_view caller, const json& id) {
    std::shared_ptr<Call> call;
    {
        std::lock_guard lock(mutex_);
        auto it = calls_.find(key_of(session, caller, id));
        if (it != calls_.end()) call = it->second.lock();
    }
    if (call) call->cancel();
}

void CallsInFlight::cancel_all() {
    std::vector<std::shared_ptr<Call>> calls;
    {
        std::lock_guard lock(mutex_);
        for (auto& [key, weak] : calls_)
            if (auto call = weak.lock()) calls.push_back(std::move(call));
    }
    for (auto& call : calls) call->cancel();
}

}  // namespace agency::mcp
