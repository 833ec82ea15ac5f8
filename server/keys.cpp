#include "server/keys.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <sys/stat.h>

#include "base/crypto.hpp"

namespace agency::mcp {

namespace {

json read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return json{{"keys", json::array()}};
    json doc = json::parse(in, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array())
        throw std::runtime_error("the keys file " + path +
                                 " is not valid: expected {\"keys\": [...]}");
    return doc;
}

}  // namespace

std::string KeyStore::default_path() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
        return std::string(xdg) + "/agency-mcp/keys.json";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.config/agency-mcp/keys.json";
    return "agency-mcp-keys.json";
}

KeyStore KeyStore::load(const std::string& path) {
    KeyStore store;
    json doc = read_file(path);
    for (const auto& k : doc["keys"]) {
        if (!k.is_object() || !k.contains("hash") || !k["hash"].is_string())
            throw std::runtime_error("the keys file " + path + " has an entry without a hash");
        KeyEntry entry{k.value("name", "unnamed"), {}, k.value("created_at", "")};
        for (const auto& s : k.value("scopes", json::array()))
            if (s.is_string()) entry.scopes.push_back(s.get<std::string>());
        store.by_hash_[k["hash"].get<std::string>()] = std::move(entry);
    }
    return store;
}

std::string KeyStore::add(const std::string& path, const std::string& name,
                          const std::vector<std::string>& scopes) {
    for (const auto& s : scopes)
        if (s != "read" && s != "write")
            throw std::runtime_error("unknown scope \"" + s + "\": use read and/or write");
    json doc = read_file(path);
    for (const auto& k : doc["keys"])
        if (k.value("name", "") == name)
            throw std::runtime_error("a key named \"" + name + "\" already exists in " + path);
    std::string key = "amcp_" + crypto::random_hex(24);
    auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    doc["keys"].push_back(
        {{"name", name}, {"hash", crypto::sha256_hex(key)}, {"scopes", scopes}, {"created_at", stamp}});
    std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        if (!out) throw std::runtime_error("cannot write the keys file " + path);
        out << doc.dump(2) << "\n";
    }
    ::chmod(tmp.c_str(), 0600);
    std::filesystem::rename(tmp, p);
    return key;
}

std::optional<Principal> KeyStore::authenticate(const std::string& presented_key) const {
    if (presented_key.empty()) return std::nullopt;
    auto it = by_hash_.find(crypto::sha256_hex(presented_key));
    if (it == by_hash_.end()) return std::nullopt;
    return Principal{"key:" + it->second.name, it->second.scopes};
}

}  // namespace agency::mcp
