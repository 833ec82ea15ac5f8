// The server's own API keys for HTTP callers. The keys file stores a SHA-256 of each key (keys
// are 192-bit random, so a plain hash is enough), with a name and scopes; a key is shown once,
// when created.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/mcp_server.hpp"

namespace agency::mcp {

struct KeyEntry {
    std::string name;
    std::vector<std::string> scopes;
    std::string created_at;
};

class KeyStore {
public:
    // Loads the file; throws std::runtime_error with a clear message when it is malformed.
    static KeyStore load(const std::string& path);
    // Creates a key, appends it to the file (created 0600 if absent), returns the key.
    static std::string add(const std::string& path, const std::string& name,
                           const std::vector<std::string>& scopes);
    static std::string default_path();

    std::optional<Principal> authenticate(const std::string& presented_key) const;
    bool empty() const { return by_hash_.empty(); }
    std::size_t size() const { return by_hash_.size(); }

private:
    std::unordered_map<std::string, KeyEntry> by_hash_;
};

}  // namespace agency::mcp
