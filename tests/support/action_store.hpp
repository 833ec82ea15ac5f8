// The store of a test's ActionRuntime. app/ opens the server's (open_state); a test makes its
// own: SQLite at `path` (":memory:", a private database, by default), stamping and expiring on
// the settings' clock when they name one, so that confirmations and leases expire by the time
// the budgets are read by.
#pragma once

#include <memory>
#include <string>

#include "state/sqlite_store.hpp"
#include "tools/pipeline/action_runtime.hpp"

namespace agency::testing {

inline tools::ActionSettings on_sqlite(tools::ActionSettings settings,
                                       const std::string& path = ":memory:") {
    auto store = std::make_shared<state::SqliteStore>(path);
    if (settings.clock) store->use_clock(*settings.clock);
    settings.store = std::move(store);
    return settings;
}

// As above, unless the settings already name a store (a test's shared PostgreSQL one).
inline tools::ActionSettings with_store(tools::ActionSettings settings) {
    return settings.store ? std::move(settings) : on_sqlite(std::move(settings));
}

}  // namespace agency::testing
