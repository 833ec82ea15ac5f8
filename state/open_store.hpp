// The state store a --state-db value names: a postgres:// or postgresql:// URL opens the shared
// PostgreSQL store, anything else is a SQLite file path (or ":memory:").
#pragma once

#include <memory>
#include <string>

#include "state/store.hpp"

namespace agency::state {

// Throws StoreError (naming the place, never a password) when it cannot be opened. `clock`
// (which must outlive the store) stamps its rows and decides expiry.
std::shared_ptr<Store> open_store(const std::string& where,
                                  SchemaUpgrade upgrade = SchemaUpgrade::migrate,
                                  const base::Clock* clock = nullptr);

}  // namespace agency::state
