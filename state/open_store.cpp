#include "state/open_store.hpp"

#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

std::shared_ptr<Store> open_store(const std::string& where, SchemaUpgrade upgrade,
                                  const base::Clock* clock) {
    std::shared_ptr<Store> store;
    if (PgStore::is_url(where))
        store = std::make_shared<PgStore>(
            where, PgStore::Options{.migrate = upgrade == SchemaUpgrade::migrate});
    else
        store = std::make_shared<SqliteStore>(where, upgrade);
    if (clock) store->use_clock(*clock);
    return store;
}

}  // namespace agency::state
