#include "state/open_store.hpp"

#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

std::shared_ptr<Store> open_store(const std::string& where, SchemaUpgrade upgrade) {
    if (PgStore::is_url(where))
        return std::make_shared<PgStore>(
            where, PgStore::Options{.migrate = upgrade == SchemaUpgrade::migrate});
    return std::make_shared<SqliteStore>(where, upgrade);
}

}  // namespace agency::state
