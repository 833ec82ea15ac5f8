// What every Store shares, whatever keeps it: the digest that binds a confirmation, an
// idempotency record and a write-log row to the arguments they were given.
#include "state/store.hpp"

#include "base/crypto.hpp"

namespace agency::state {

std::string args_digest(const nlohmann::json& args) { return crypto::sha256_hex(args.dump()); }

}  // namespace agency::state
