// The action runtime: what every action's gate stands on (tools/pipeline/pipeline.cpp): the
// state store, the credit limiter, the write log and the leased audit jobs, built once per
// server and shared by every action tool.
#include "tools/pipeline/action_runtime.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/crypto.hpp"
#include "base/log.hpp"

namespace agency::tools {

namespace {
ActionSettings with_instance_id(ActionSettings settings) {
    if (settings.sharing.instance_id.empty())
        settings.sharing.instance_id = "i_" + crypto::random_hex(8);
    return settings;
}

// The store app/ opened (or a test made): the tools name no backend.
std::shared_ptr<Store> store_of(const ActionSettings& settings) {
    if (!settings.store)
        throw std::invalid_argument("ActionRuntime: no store (app/ opens it with open_state)");
    return settings.store;
}
}  // namespace

ActionRuntime::ActionRuntime(ActionSettings settings)
    : settings_(with_instance_id(std::move(settings))),
      store_(store_of(settings_)),
      credits_(settings_.credits, store_),
      write_log_(
          store_,
          {.spool_path = settings_.write_log_spool, .refusal_window = settings_.refusal_window},
          clock()),
      audits_(store_, settings_.audit_workers, settings_.sharing) {
    audits_.on_change([this](const Job&) {
        {
            std::lock_guard lock(audit_mutex_);
            ++audit_version_;
        }
        audit_changed_.notify_all();
    });
}

ActionRuntime::~ActionRuntime() { audits_.stop(); }

std::uint64_t ActionRuntime::audit_version() {
    std::lock_guard lock(audit_mutex_);
    return audit_version_;
}

void ActionRuntime::wait_audit_change(std::uint64_t& seen, std::stop_token stop,
                                      std::chrono::milliseconds at_most) {
    std::unique_lock lock(audit_mutex_);
    audit_changed_.wait_for(lock, stop, at_most, [&] { return audit_version_ != seen; });
    seen = audit_version_;
}

}  // namespace agency::tools
