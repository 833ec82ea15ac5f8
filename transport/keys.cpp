#include "transport/keys.hpp"
#include "transport/keys_import.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.hpp"

#include "base/crypto.hpp"

namespace agency::mcp {

namespace {

using KeyMap = std::unordered_map<std::string, KeyEntry>;  // by the key's SHA-256

// Why this process cannot use the keys file: the errno, who owns the file and who we are, so
// that the fix (the service's group, mode 0640) is plain.
std::string unreadable(const std::string& path, int err) {
    std::string text = "cannot read the keys file " + path + ": " + std::strerror(err);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0)
        text += fmt::format(" (owner uid {} gid {}, mode {:04o}; this process runs as uid {} gid {}: "
                            "the file must be readable by its user or group, e.g. chgrp the "
                            "service's group and chmod 0640)",
                            st.st_uid, st.st_gid, st.st_mode & 07777, ::geteuid(), ::getegid());
    return text;
}

// Why `id` cannot name a client ("" when it can): ids are the gateway's, one word each.
std::string client_id_problem(const std::string& id) {
    if (id.empty()) return "an empty client id";
    if (id.size() > 200) return "a client id longer than 200 characters";
    for (const unsigned char c : id)
        if (c <= 0x20 || c == ',' || c == 0x7f)
            return "client id \"" + id + "\", which holds a space, comma or control character";
    return "";
}

// A key's `clients` (a list of client ids) and `monthly_actions` (a whole number >= 0), when
// present; throws naming the key and what is wrong.
void check_limits(const json& k, const std::string& path) {
    const auto name = k.find("name");
    const std::string where =
        "the keys file " + path + ": key " +
        (name != k.end() && name->is_string() ? "\"" + name->get<std::string>() + "\""
                                               : std::string("without a name"));
    if (auto c = k.find("clients"); c != k.end() && !c->is_null()) {
        if (!c->is_array())
            throw std::runtime_error(where + ": \"clients\" must be a list of client ids");
        for (const auto& id : *c) {
            if (!id.is_string())
                throw std::runtime_error(where + ": \"clients\" must hold client ids (strings)");
            if (const auto why = client_id_problem(id.get<std::string>()); !why.empty())
                throw std::runtime_error(where + ": \"clients\" holds " + why);
        }
    }
    if (auto m = k.find("monthly_actions"); m != k.end() && !m->is_null()) {
        if (!m->is_number_integer() || m->get<std::int64_t>() < 0)
            throw std::runtime_error(where + ": \"monthly_actions\" must be a whole number >= 0 "
                                     "(0: no generation action), or absent for the server's "
                                     "default; it is " + m->dump());
    }
}

// The file as JSON; a missing file holds no key. A file that exists but cannot be read throws:
// taken for an empty one, it would refuse every caller (or, for `keys add`, be overwritten).
json read_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return json{{"keys", json::array()}};
        throw std::runtime_error(unreadable(path, errno));
    }
    std::string text;
    char buffer[8192];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) != 0) {
        if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
    }
    const int err = errno;
    ::close(fd);
    if (n < 0) throw std::runtime_error(unreadable(path, err));
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array())
        throw std::runtime_error("the keys file " + path +
                                 " is not valid: expected {\"keys\": [...]}");
    for (const auto& k : doc["keys"]) {
        if (!k.is_object() || !k.contains("hash") || !k["hash"].is_string())
            throw std::runtime_error("the keys file " + path + " has an entry without a hash");
        check_limits(k, path);
    }
    return doc;
}

KeyEntry entry_of(const json& k) {
    const auto name = k.find("name");
    KeyEntry entry{name != k.end() && name->is_string() ? name->get<std::string>() : "",
                   {}, k.value("created_at", ""),
                   k.value("rotated_at", "")};
    for (const auto& s : k.value("scopes", json::array()))
        if (s.is_string()) entry.scopes.push_back(s.get<std::string>());
    if (auto c = k.find("clients"); c != k.end() && c->is_array())
        for (const auto& id : *c) entry.clients.push_back(id.get<std::string>());
    if (auto m = k.find("monthly_actions"); m != k.end() && m->is_number_integer())
        entry.monthly_actions = m->get<std::int64_t>();
    return entry;
}

// Every key has a name of its own: the name is the caller ("key:<name>"), whose jobs, tasks,
// drafts and budget are its alone, so a key without one, or two keys of one name, would share
// them. Throws naming the file, the entry and the fix.
void check_names(const json& doc, const std::string& path) {
    std::unordered_map<std::string, std::size_t> seen;  // name -> entry number (from 1)
    const auto& keys = doc["keys"];
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto name = keys[i].find("name");
        if (name == keys[i].end() || !name->is_string() || name->get<std::string>().empty())
            throw std::runtime_error(fmt::format(
                "the keys file {}: entry {} of {} has no name; every key needs a \"name\" of "
                "its own (its callers are \"key:<name>\"): give it one in the file, or create "
                "a new key with agency-mcp keys add --name NAME and delete the entry",
                path, i + 1, keys.size()));
        const auto [at, fresh] = seen.emplace(name->get<std::string>(), i + 1);
        if (!fresh)
            throw std::runtime_error(fmt::format(
                "the keys file {}: entries {} and {} are both named \"{}\"; every key needs a "
                "name of its own (its callers are \"key:<name>\", and would share jobs, tasks "
                "and budget): rename one in the file, or run agency-mcp keys remove --name {} "
                "(it removes the first)",
                path, at->second, i + 1, at->first, at->first));
    }
}

// The keys as the server holds them: a file whose names are missing or shared is refused.
KeyMap read_keys(const std::string& path) {
    KeyMap keys;
    const json doc = read_file(path);  // named: a temporary's member would dangle in the loop
    check_names(doc, path);
    for (const auto& k : doc["keys"]) keys[k["hash"].get<std::string>()] = entry_of(k);
    return keys;
}

std::string now_utc() {
    auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm parts{};
    gmtime_r(&now, &parts);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return stamp;
}

std::string new_key() { return "amcp_" + crypto::random_hex(24); }

// The file a change replaces: `path`, or the file its symbolic links lead to.
std::filesystem::path resolved(const std::string& path) {
    std::filesystem::path p(path);
    std::error_code ec;  // a file that does not exist yet is no link (its error is no failure)
    for (int links = 0; std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec)); ++links) {
        const std::filesystem::path target = std::filesystem::read_symlink(p, ec);
        if (ec || links == 40)
            throw std::runtime_error("cannot write the keys file " + path +
                                     ": cannot follow its symbolic link");
        p = target.is_absolute() ? target : p.parent_path() / target;
    }
    return p;
}

std::atomic<std::int64_t> lock_wait_ms{10000};

// One writer of the keys file at a time: an exclusive flock(2) on "<file>.lock" beside it (not
// on the file itself, which each change replaces by a rename), taken before the file is read
// and held until the new one is in place, so that two changes at once never lose one of them.
// Waits at most lock_wait_ms, then throws: nothing was changed.
class WriterLock {
public:
    WriterLock(const std::filesystem::path& file, const std::string& path) {
        const std::string lock = file.string() + ".lock";
        // Empty and 0644 (whatever the umask): any writer of the keys file, root or the
        // file's owner, can open it to take the lock.
        fd_ = ::open(lock.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd_ >= 0 && ::fchmod(fd_, 0644) != 0) {
            // Best effort: as the umask left it, it still serves whoever made it.
        }
        if (fd_ < 0 && errno == EEXIST)
            fd_ = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd_ < 0)
            throw std::runtime_error("cannot change the keys file " + path +
                                     ": cannot open its lock file " + lock + ": " +
                                     std::strerror(errno) + " (nothing was changed)");
        const auto wait = std::chrono::milliseconds(lock_wait_ms.load());
        const auto deadline = std::chrono::steady_clock::now() + wait;
        while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            if (err == EINTR) continue;
            if (err == EWOULDBLOCK && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
                continue;
            }
            ::close(fd_);
            throw std::runtime_error(
                err != EWOULDBLOCK
                    ? "cannot change the keys file " + path + ": cannot lock " + lock + ": " +
                          std::strerror(err) + " (nothing was changed)"
                    : fmt::format("cannot change the keys file {}: another change has held its "
                                  "lock ({}) for over {} ms, so nothing was changed; run the "
                                  "command again once the other one ends (fuser {} names it)",
                                  path, lock, wait.count(), lock));
        }
    }
    ~WriterLock() { ::close(fd_); }  // closing lets the lock go
    WriterLock(const WriterLock&) = delete;
    WriterLock& operator=(const WriterLock&) = delete;

private:
    int fd_ = -1;
};

// Writes the whole document to a fresh file beside `p` (`path` resolved) and renames it over
// `p`: a running server reading the file sees the old one or the new one, never a part. The
// new file gets the old one's owner, group and mode (the packaged service reads a 0640
// root:agency-mcp file through its group; a rewrite as 0600 root:root would lock it out), or
// 0600 and this process's owner for a new file. Anything that fails leaves the old file as it
// was. The caller holds the WriterLock.
void write_file(const std::string& path, const std::filesystem::path& p, const json& doc) {
    std::error_code ec;
    struct stat old {};
    const bool existed = ::stat(p.c_str(), &old) == 0;
    const std::string tmp = p.string() + ".tmp-" + crypto::random_hex(6);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        throw std::runtime_error("cannot write the keys file " + path + ": cannot create " + tmp +
                                 ": " + std::strerror(errno));
    std::string failure;
    if (existed && (::fchown(fd, old.st_uid, old.st_gid) != 0 ||
                    ::fchmod(fd, old.st_mode & 07777) != 0))
        failure = fmt::format(": cannot give the new file the old one's owner uid {} gid {} and "
                              "mode {:04o} ({}); run this as root or as the file's owner",
                              old.st_uid, old.st_gid, old.st_mode & 07777, std::strerror(errno));
    const std::string text = doc.dump(2) + "\n";
    std::size_t done = 0;
    while (failure.empty() && done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0) failure = std::string(": ") + std::strerror(n < 0 ? errno : EIO);
        else done += static_cast<std::size_t>(n);
    }
    if (failure.empty() && ::fsync(fd) != 0) failure = std::string(": ") + std::strerror(errno);
    ::close(fd);
    if (failure.empty()) {
        std::filesystem::rename(tmp, p, ec);
        if (ec) failure = ": " + ec.message();
    }
    if (failure.empty()) {  // the rename itself survives a crash once its folder is synced
        const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
        if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
            if (::fsync(dfd) != 0) log::warn("the keys file {}: syncing {}: {}", path, dir,
                                             std::strerror(errno));
            ::close(dfd);
        }
    }
    if (!failure.empty()) {
        std::filesystem::remove(tmp, ec);
        throw std::runtime_error("cannot write the keys file " + path + failure +
                                 " (nothing was changed)");
    }
}

// A change of the keys file: `change` edits the document as read under the writer lock, and
// what it leaves is written back before the lock is let go. `names_checked`: the file must
// hold a unique name per key first (remove, the way to repair it, goes without).
void rewrite(const std::string& path, const std::function<void(json&)>& change,
             bool names_checked = true) {
    const std::filesystem::path file = resolved(path);
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
    const WriterLock lock(file, path);
    json doc = read_file(path);
    if (names_checked) check_names(doc, path);
    change(doc);
    write_file(path, file, doc);
}

void check_scopes(const std::vector<std::string>& scopes) {
    for (const auto& s : scopes)
        if (s != "read" && s != "write")
            throw std::runtime_error("unknown scope \"" + s + "\": use read and/or write");
}

// The clients and budget `keys add` / `keys update` were given; throws naming what is wrong.
void check_new_limits(const std::vector<std::string>& clients,
                      std::optional<std::int64_t> monthly_actions) {
    for (const auto& id : clients)
        if (const auto why = client_id_problem(id); !why.empty())
            throw std::runtime_error("--clients holds " + why +
                                     ": give client ids separated by commas (list_clients "
                                     "shows them)");
    if (monthly_actions && *monthly_actions < 0)
        throw std::runtime_error("--monthly-actions must be 0 or more (0: no generation action)");
}

// The index of the entry named `name`; throws naming the keys the file does hold.
std::size_t find_named(const json& doc, const std::string& path, const std::string& name) {
    std::string known;
    const auto& keys = doc["keys"];
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::string each = keys[i].value("name", "");
        if (each == name) return i;
        known += (known.empty() ? "" : ", ") + each;
    }
    throw std::runtime_error("no key named \"" + name + "\" in " + path +
                             (known.empty() ? " (it holds no key)" : " (keys: " + known + ")"));
}

// What identifies one version of the file: a rename gives a new inode, an edit in place a new
// modification time or size.
using Stamp = std::tuple<bool, ino_t, off_t, long, long>;

Stamp stamp_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {false, 0, 0, 0, 0};
    return {true, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

}  // namespace

struct KeyStore::Watch {
    std::string path;
    std::mutex mu;
    Stamp stamp;
    std::shared_ptr<const KeyMap> keys = std::make_shared<KeyMap>();

    // The keys as the file holds them now; re-read when the file changed. A file that cannot
    // be read as keys leaves the last good set in force (our own writes are atomic, so that
    // is a hand edit in progress), said once per change.
    std::shared_ptr<const KeyMap> current() {
        const Stamp now = stamp_of(path);
        std::lock_guard lock(mu);
        if (now == stamp) return keys;
        stamp = now;
        try {
            keys = std::make_shared<const KeyMap>(read_keys(path));
            log::info("keys file {} changed: {} key(s) now", path, keys->size());
        } catch (const std::exception& e) {
            log::error("{}; the keys read before stay in force until it is fixed", e.what());
        }
        return keys;
    }
};

KeyStore::KeyStore() : watch_(std::make_unique<Watch>()) {}
KeyStore::~KeyStore() = default;
KeyStore::KeyStore(KeyStore&&) noexcept = default;
KeyStore& KeyStore::operator=(KeyStore&&) noexcept = default;

std::string KeyStore::default_path() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
        return std::string(xdg) + "/agency-mcp/keys.json";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.config/agency-mcp/keys.json";
    return "agency-mcp-keys.json";
}

KeyStore KeyStore::load(const std::string& path) {
    KeyStore store;
    store.watch_->path = path;
    store.watch_->stamp = stamp_of(path);
    store.watch_->keys = std::make_shared<const KeyMap>(read_keys(path));
    store.empty_at_load_ = store.watch_->keys->empty();
    return store;
}

std::string KeyStore::add(const std::string& path, const std::string& name,
                          const std::vector<std::string>& scopes,
                          const std::vector<std::string>& clients,
                          std::optional<std::int64_t> monthly_actions) {
    check_scopes(scopes);
    if (name.empty()) throw std::runtime_error("a key needs a name (--name)");
    check_new_limits(clients, monthly_actions);
    std::string key = new_key();
    rewrite(path, [&](json& doc) {
        for (const auto& k : doc["keys"])
            if (k.value("name", "") == name)
                throw std::runtime_error("a key named \"" + name + "\" already exists in " +
                                         path + " (each key needs a name of its own; keys "
                                         "rotate replaces a key, keys update changes it)");
        json entry = {{"name", name}, {"hash", crypto::sha256_hex(key)}, {"scopes", scopes},
                      {"created_at", now_utc()}};
        // Members only when set: a key without them reads as before (and as older versions
        // read it).
        if (!clients.empty()) entry["clients"] = clients;
        if (monthly_actions) entry["monthly_actions"] = *monthly_actions;
        doc["keys"].push_back(std::move(entry));
    });
    return key;
}

std::vector<std::string> KeyStore::add_many(const std::string& path,
                                           const std::vector<NewKey>& rows) {
    for (const auto& row : rows) {
        try {
            check_scopes(row.scopes);
            check_new_limits(row.clients, row.monthly_actions);
        } catch (const std::exception& e) {
            throw std::runtime_error("keys import: the key \"" + row.name + "\": " + e.what() +
                                     " (nothing was imported)");
        }
    }
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < rows.size(); ++i) keys.push_back(new_key());
    rewrite(path, [&](json& doc) {
        for (const auto& k : doc["keys"])
            for (const auto& row : rows)
                if (k.value("name", "") == row.name)
                    throw std::runtime_error("keys import: a key named \"" + row.name +
                                             "\" already exists in " + path +
                                             " (nothing was imported)");
        for (std::size_t i = 0; i < rows.size(); ++i) {
            json entry = {{"name", rows[i].name}, {"hash", crypto::sha256_hex(keys[i])},
                          {"scopes", rows[i].scopes}, {"created_at", now_utc()}};
            if (!rows[i].clients.empty()) entry["clients"] = rows[i].clients;
            if (rows[i].monthly_actions) entry["monthly_actions"] = *rows[i].monthly_actions;
            doc["keys"].push_back(std::move(entry));
        }
    });
    return keys;
}

KeyEntry KeyStore::update(const std::string& path, const std::string& name,
                          const KeyLimits& limits) {
    if (!limits.clients && !limits.monthly_actions)
        throw std::runtime_error("nothing to change: name --clients, --all-clients, "
                                 "--monthly-actions or --no-monthly-actions");
    check_new_limits(limits.clients.value_or(std::vector<std::string>{}),
                     limits.monthly_actions.value_or(std::nullopt));
    KeyEntry now;
    rewrite(path, [&](json& doc) {
        json& entry = doc["keys"][find_named(doc, path, name)];
        if (limits.clients) {
            if (limits.clients->empty()) entry.erase("clients");
            else entry["clients"] = *limits.clients;
        }
        if (limits.monthly_actions) {
            if (*limits.monthly_actions) entry["monthly_actions"] = **limits.monthly_actions;
            else entry.erase("monthly_actions");
        }
        entry["updated_at"] = now_utc();
        now = entry_of(entry);
    });
    return now;
}

std::vector<KeyEntry> KeyStore::list(const std::string& path) {
    std::vector<KeyEntry> out;
    const json doc = read_file(path);
    for (const auto& k : doc["keys"]) out.push_back(entry_of(k));
    return out;
}

void KeyStore::remove(const std::string& path, const std::string& name) {
    // Without the names' check: removing one of two keys of one name repairs the file.
    rewrite(path, [&](json& doc) { doc["keys"].erase(find_named(doc, path, name)); }, false);
}

std::string KeyStore::rotate(const std::string& path, const std::string& name) {
    std::string key = new_key();
    rewrite(path, [&](json& doc) {
        json& entry = doc["keys"][find_named(doc, path, name)];
        entry["hash"] = crypto::sha256_hex(key);
        entry["rotated_at"] = now_utc();
    });
    return key;
}

void KeyStore::set_lock_wait(std::chrono::milliseconds wait) { lock_wait_ms = wait.count(); }

std::size_t KeyStore::size() const {
    return watch_->path.empty() ? watch_->keys->size() : watch_->current()->size();
}

std::optional<Principal> KeyStore::authenticate(const std::string& presented_key) const {
    if (presented_key.empty()) return std::nullopt;
    const auto keys = watch_->path.empty() ? watch_->keys : watch_->current();
    auto it = keys->find(crypto::sha256_hex(presented_key));
    if (it == keys->end()) return std::nullopt;
    Principal principal{"key:" + it->second.name, it->second.scopes};
    principal.authenticated = true;
    principal.clients = it->second.clients;
    principal.action_budget = it->second.monthly_actions;
    return principal;
}

}  // namespace agency::mcp
