// The server's own API keys for HTTP callers. The keys file stores a SHA-256 of each key (keys
// are 192-bit random, so a plain hash is enough), with a name and scopes; a key is shown once,
// when created or rotated. Every change to the file is written whole to a temporary file beside
// it and renamed over it, so a reader never sees half a file; the new file keeps the old one's
// owner, group and mode (a service that reads it through its group keeps reading it). A file
// that exists but cannot be read is an error, never taken for one that holds no key.
#pragma once

#include <memory>
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
    std::string rotated_at;  // empty: never rotated
};

class KeyStore {
public:
    // Loads the file (a missing file holds no key); throws std::runtime_error with a clear
    // message when it is malformed or cannot be read. The store then follows the file: authenticate() re-reads
    // it when it changed on disk (one stat per call), so a removed or rotated key stops
    // working without a restart.
    static KeyStore load(const std::string& path);
    // Creates a key, adds it to the file (created 0600 if absent), returns the key. Every
    // rewrite keeps the file's owner, group and mode, or changes nothing and throws.
    static std::string add(const std::string& path, const std::string& name,
                           const std::vector<std::string>& scopes);
    // Every key's name, scopes and times, in the file's order; never a hash.
    static std::vector<KeyEntry> list(const std::string& path);
    // Remove the key named `name`; throws std::runtime_error naming the known names when none is.
    static void remove(const std::string& path, const std::string& name);
    // Replaces the key named `name` by a new one (same name and scopes), returns it.
    static std::string rotate(const std::string& path, const std::string& name);
    static std::string default_path();

    KeyStore();
    ~KeyStore();
    KeyStore(KeyStore&&) noexcept;
    KeyStore& operator=(KeyStore&&) noexcept;

    std::optional<Principal> authenticate(const std::string& presented_key) const;
    // No key when loaded: the transport then asks for none, for the life of the store (a key
    // added later does not switch authentication on; a store that had keys never switches it
    // off, even when every key is removed: then every request is refused).
    bool empty() const { return empty_at_load_; }
    // Keys held now (after re-reading a changed file).
    std::size_t size() const;

private:
    struct Watch;
    std::unique_ptr<Watch> watch_;
    bool empty_at_load_ = true;
};

}  // namespace agency::mcp
