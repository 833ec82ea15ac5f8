// The server's own API keys for HTTP callers. The keys file stores a SHA-256 of each key (keys
// are 192-bit random, so a plain hash is enough), with a name and scopes; a key is shown once,
// when created or rotated. Every change to the file is written whole to a temporary file beside
// it and renamed over it, so a reader never sees half a file; one change at a time (a lock file
// beside it), so two at once never undo each other; the new file keeps the old one's
// owner, group and mode (a service that reads it through its group keeps reading it). A file
// that exists but cannot be read is an error, never taken for one that holds no key.
#pragma once

#include <chrono>
#include <cstdint>
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
    // The clients the key may reach (issue 35); empty: every client the gateway key reaches.
    std::vector<std::string> clients;
    // Generation actions per budget window; nullopt: the server's default.
    std::optional<std::int64_t> monthly_actions;
};

// What `keys update` changes; an unset member stays as it is.
struct KeyLimits {
    // Set: the key's clients become these (an empty list: every client).
    std::optional<std::vector<std::string>> clients;
    // Set: the key's budget becomes this (a nullopt inside: the server's default).
    std::optional<std::optional<std::int64_t>> monthly_actions;
};

struct NewKey;  // transport/keys_import.hpp

class KeyStore {
public:
    // Loads the file (a missing file holds no key); throws std::runtime_error with a clear
    // message when it is malformed, holds a key without a name or two of one name (they would
    // be one caller), or cannot be read. The store then follows the file: authenticate() re-reads
    // it when it changed on disk (one stat per call), so a removed or rotated key stops
    // working without a restart.
    static KeyStore load(const std::string& path);
    // Creates a key, adds it to the file (created 0600 if absent), returns the key. Every
    // rewrite keeps the file's owner, group and mode, or changes nothing and throws.
    // `clients`: the only clients it may reach (empty: every one); `monthly_actions`: its
    // action budget (nullopt: the server's default). Throws naming a bad client id or budget.
    static std::string add(const std::string& path, const std::string& name,
                           const std::vector<std::string>& scopes,
                           const std::vector<std::string>& clients = {},
                           std::optional<std::int64_t> monthly_actions = std::nullopt);
    // `keys import`: every key of `rows` (transport/keys_import.hpp) added in one rewrite, or
    // none (a bad scope, client or budget, or a name the file already has, throws naming it);
    // returns the keys in the rows' order.
    static std::vector<std::string> add_many(const std::string& path,
                                             const std::vector<NewKey>& rows);
    // Changes the clients and/or budget of the key named `name`; the key itself stays. A
    // running server applies it from its next request. Returns the entry as it is now.
    static KeyEntry update(const std::string& path, const std::string& name,
                           const KeyLimits& limits);
    // Every key's name, scopes and times, in the file's order; never a hash.
    static std::vector<KeyEntry> list(const std::string& path);
    // Remove the key named `name`; throws std::runtime_error naming the known names when none is.
    static void remove(const std::string& path, const std::string& name);
    // Replaces the key named `name` by a new one (same name and scopes), returns it.
    static std::string rotate(const std::string& path, const std::string& name);
    static std::string default_path();
    // How long a change waits for another one to finish (each add, update, rotate and remove
    // holds an exclusive lock on "<file>.lock" from its read to its rename) before it fails,
    // changing nothing. 10 s unless set (tests shorten it).
    static void set_lock_wait(std::chrono::milliseconds wait);

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
