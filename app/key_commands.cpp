// keys add, update, list, remove and rotate, and the keys file as `serve --http` opens it.
#include <algorithm>
#include <fstream>
#include <filesystem>
#include <functional>
#include <optional>
#include <iostream>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.hpp"

#include "app/commands.hpp"
#include "base/clock.hpp"
#include "base/text.hpp"
#include "state/sqlite_store.hpp"
#include "tools/pipeline/budgets.hpp"
#include "transport/keys.hpp"
#include "transport/keys_import.hpp"

namespace agency::app {

namespace {

std::string keys_path(const KeysArgs& args) {
    return args.keys_file.empty() ? mcp::KeyStore::default_path() : args.keys_file;
}

std::string joined(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
    return out;
}

// "clients: all, actions: server default" and the like, for what add and update say.
std::string limits_text(const std::vector<std::string>& clients,
                        std::optional<std::int64_t> monthly_actions) {
    return "clients: " + (clients.empty() ? std::string("all") : joined(clients)) +
           ", actions per month: " +
           (monthly_actions ? std::to_string(*monthly_actions) : std::string("server default"));
}

std::string group_name(gid_t gid) {
    const group* g = ::getgrgid(gid);
    return g != nullptr ? std::string(g->gr_name) : std::to_string(gid);
}

// Whether this process runs as `gid` (its group, or one of its supplementary groups).
bool runs_as_group(gid_t gid) {
    if (gid == ::getegid()) return true;
    std::vector<gid_t> groups(static_cast<std::size_t>(std::max(::getgroups(0, nullptr), 0)));
    const int got = groups.empty() ? 0 : ::getgroups(static_cast<int>(groups.size()), groups.data());
    groups.resize(static_cast<std::size_t>(std::max(got, 0)));
    return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

// Who besides this server can read the keys file (the hashes of every caller's key). Accepted:
// no one (0600), or the group this server runs as (the Debian package's layout: 0640
// root:agency-mcp, the service running as agency-mcp; or a SupplementaryGroups= of its unit).
// Warned: every user, a group that is not the server's, a group that may change the file.
std::optional<std::string> exposure(const struct stat& st) {
    const unsigned mode = st.st_mode & 0777;
    if ((mode & 007) != 0)
        return fmt::format("every user on this machine can read it (mode {:04o}); chmod o-rwx it",
                           mode);
    if ((mode & 070) != 0 && !runs_as_group(st.st_gid))
        return fmt::format(
            "its group {} can read it (mode {:04o}) and this server does not run as that group "
            "(it runs as {}); chgrp {} it, or chmod g-rwx it",
            group_name(st.st_gid), mode, group_name(::getegid()), group_name(::getegid()));
    if ((mode & 020) != 0)
        return fmt::format(
            "its group {} may change it (mode {:04o}), so this server could add keys to it; "
            "chmod g-w it",
            group_name(st.st_gid), mode);
    return std::nullopt;
}

}  // namespace

// What a change to the keys file does to a running server, true of every layout.
constexpr const char* kFollowed =
    "a server reading this file applies it from its next request; one reading a copy of it "
    "(a systemd credential, LoadCredential=) only after its restart";

int run_keys_import(const KeysArgs& args) {
    std::string text;
    {
        std::ifstream file;
        if (args.import_from != "-") {
            file.open(args.import_from, std::ios::binary);
            if (!file) throw std::runtime_error("keys import: cannot read " + args.import_from);
        }
        std::istream& in = args.import_from == "-" ? std::cin : file;
        text.resize(mcp::kMaxImportBytes + 1);
        in.read(text.data(), static_cast<std::streamsize>(text.size()));
        text.resize(static_cast<std::size_t>(in.gcount()));
    }
    const auto rows = mcp::parse_key_rows(text);
    // The new keys' file first: a place they cannot be written to is found before any is made.
    int fd = -1;
    if (!args.out.empty()) {
        fd = ::open(args.out.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            throw std::runtime_error("keys import: cannot create " + args.out + ": " +
                                     std::generic_category().message(errno) +
                                     " (it must be a new file)");
    }
    const std::string path = keys_path(args);
    std::vector<std::string> keys;
    try {
        keys = mcp::KeyStore::add_many(path, rows);
    } catch (...) {
        if (fd >= 0) {
            ::close(fd);
            ::unlink(args.out.c_str());
        }
        throw;
    }
    // Names are printable (parse_key_rows), but may hold a comma or start like a formula.
    std::string listing = "name,key\n";
    for (std::size_t i = 0; i < rows.size(); ++i)
        listing += base::csv_cell(rows[i].name) + "," + keys[i] + "\n";
    if (fd >= 0) {
        const bool written = ::write(fd, listing.data(), listing.size()) ==
                             static_cast<ssize_t>(listing.size());
        ::close(fd);
        if (!written)
            throw std::runtime_error("keys import: writing " + args.out + " failed after the " +
                                     std::to_string(rows.size()) + " key(s) were added to " +
                                     path + ": their values are lost; keys rotate --name NAME "
                                     "gives each a new one");
    } else {
        std::cout << listing << std::flush;
    }
    std::cerr << "created " << rows.size() << " key(s) in " << path << "; each is shown only "
              << "this once (" << (args.out.empty() ? "above" : args.out)
              << "): hand each person theirs, then delete the list; " << kFollowed << std::endl;
    return 0;
}

int run_keys_add(const KeysArgs& args) {
    const std::string path = keys_path(args);
    const std::string key =
        mcp::KeyStore::add(path, args.name, args.scopes, args.clients, args.monthly_actions);
    std::cout << key << std::endl;
    std::cerr << "created key \"" << args.name << "\" in " << path << " (" << limits_text(
                     args.clients, args.monthly_actions)
              << "); it is shown only this once" << std::endl;
    return 0;
}

int run_keys_update(const KeysArgs& args) {
    const std::string path = keys_path(args);
    mcp::KeyLimits limits;
    if (args.all_clients) limits.clients = std::vector<std::string>{};
    else if (!args.clients.empty()) limits.clients = args.clients;
    if (args.no_monthly_actions) limits.monthly_actions.emplace(std::nullopt);
    else if (args.monthly_actions) limits.monthly_actions.emplace(args.monthly_actions);
    const mcp::KeyEntry now = mcp::KeyStore::update(path, args.name, limits);
    std::cerr << "updated key \"" << args.name << "\" in " << path << ": "
              << limits_text(now.clients, now.monthly_actions)
              << "; a running server applies it from its next request (the key is unchanged)"
              << std::endl;
    return 0;
}

// The actions each key spent this budget window, from the server's state store; empty when
// the store is not there (a SQLite file that does not exist is not created) or cannot be read.
std::function<std::optional<std::int64_t>(const std::string&)> budget_use(const KeysArgs& args) {
    const std::string db =
        args.state_db.empty() ? state::SqliteStore::default_path() : args.state_db;
    if (args.state_url.empty() && !std::filesystem::exists(db)) return {};
    try {
        auto store = open_state(args.state_url, db, state::SchemaUpgrade::refuse);
        store->schema_version();  // opened now: an older schema is said here, not mid-list
        const auto window = tools::parse_budget_window(args.budget_window)
                                .value_or(tools::BudgetWindow::month);
        const std::int64_t start =
            tools::budget_window_at(window, base::Clock::system().unix_s()).start;
        return [store, start](const std::string& name) -> std::optional<std::int64_t> {
            return store->budget_used("key:" + name, start);
        };
    } catch (const std::exception& e) {
        std::cerr << "keys list: the budget use is not shown (" << e.what() << ")" << std::endl;
        return {};
    }
}

// What `keys list` prints of a key's budget: "USED/LIMIT" this window ("default" for the
// server's limit), or the limit alone when the store is not read.
std::string budget_column(const mcp::KeyEntry& k,
                          const std::function<std::optional<std::int64_t>(const std::string&)>& use) {
    const std::string limit = k.monthly_actions ? std::to_string(*k.monthly_actions) : "default";
    const auto used = use ? use(k.name) : std::nullopt;
    return used ? std::to_string(*used) + "/" + limit : limit;
}

int run_keys_list(const KeysArgs& args) {
    const std::string path = keys_path(args);
    const auto keys = mcp::KeyStore::list(path);
    const auto use = keys.empty() ? nullptr : budget_use(args);
    if (keys.empty()) {
        std::cerr << "no keys in " << path << " (create one: agency-mcp keys add --name NAME)"
                  << std::endl;
        return 0;
    }
    // A hand-edited file may hold a key without a name, which the server refuses: shown so.
    const auto name_of = [](const mcp::KeyEntry& k) {
        return k.name.empty() ? std::string("(no name)") : k.name;
    };
    std::size_t width = 4;
    for (const auto& k : keys) width = std::max(width, name_of(k).size());
    const auto padded = [](std::string text, std::size_t to) {
        text.resize(std::max(text.size(), to), ' ');
        return text;
    };
    std::cout << padded("NAME", width + 2)
              << "SCOPES      CREATED               ROTATED               ACTIONS (USED/LIMIT)  "
                 "CLIENTS\n";
    for (const auto& k : keys) {
        std::cout << padded(name_of(k), width + 2) << padded(joined(k.scopes), 10) << "  "
                  << padded(k.created_at.empty() ? "-" : k.created_at, 20) << "  "
                  << padded(k.rotated_at.empty() ? "-" : k.rotated_at, 20) << "  "
                  << padded(budget_column(k, use), 20) << "  "
                  << (k.clients.empty() ? "all" : joined(k.clients)) << "\n";
    }
    std::cout << std::flush;
    return std::cout ? 0 : 1;
}

int run_keys_remove(const KeysArgs& args) {
    const std::string path = keys_path(args);
    mcp::KeyStore::remove(path, args.name);
    std::cerr << "removed key \"" << args.name << "\" from " << path << "; " << kFollowed
              << std::endl;
    return 0;
}

int run_keys_rotate(const KeysArgs& args) {
    const std::string path = keys_path(args);
    const std::string key = mcp::KeyStore::rotate(path, args.name);
    std::cout << key << std::endl;
    std::cerr << "rotated key \"" << args.name << "\" in " << path
              << ": the new key is shown only this once. The old one stops working where the new "
                 "one starts: " << kFollowed << std::endl;
    return 0;
}

std::string serving_keys_path(const std::string& named) {
    if (!named.empty()) return named;
    std::string fallback = mcp::KeyStore::default_path();
    std::error_code ec;
    return std::filesystem::exists(fallback, ec) ? fallback : std::string();
}

// A keys file named but missing (or holding no key) would mean no authentication at all: the
// caller asked for keys, so that is refused rather than served open (a typo in a path must not
// open the server). An existing file is followed while serving (removed keys stop working),
// unless it is a copy: systemd's credentials (LoadCredential=) are copied as the service starts.
std::shared_ptr<const mcp::KeyStore> open_keys_for_serving(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw std::runtime_error(
            "the keys file " + path +
            " does not exist, so HTTP requests would NOT be authenticated; refusing to start. "
            "Create it with: agency-mcp keys add --name NAME --keys-file " + path +
            " (or drop --keys-file / AGENCY_KEYS_FILE to serve loopback without keys)");
    auto keys = std::make_shared<const mcp::KeyStore>(mcp::KeyStore::load(path));
    if (keys->empty())
        throw std::runtime_error(
            "the keys file " + path +
            " holds no key, so HTTP requests would NOT be authenticated; refusing to start. "
            "Add one with: agency-mcp keys add --name NAME --keys-file " + path);
    if (const auto why = exposure(st)) log::warn("the keys file {}: {}", path, *why);
    const char* credentials = std::getenv("CREDENTIALS_DIRECTORY");
    if (credentials && *credentials && path.rfind(std::string(credentials) + "/", 0) == 0) {
        log::warn("HTTP callers need a key: {} key(s) in {}, a copy systemd made as the service "
                  "started (LoadCredential=): a key added, rotated or removed in the original "
                  "applies only after a restart. Name the file itself in AGENCY_KEYS_FILE, "
                  "readable by the service's group, to follow changes at once (docs/deploy.md)",
                  keys->size(), path);
        return keys;
    }
    log::info("HTTP callers need a key: {} key(s) in {}{}; the file is followed (a key added, "
              "rotated or removed applies from the next request)",
              keys->size(), path,
              path == mcp::KeyStore::default_path()
                  ? " (the default keys file, the one `agency-mcp keys add` writes)"
                  : "");
    return keys;
}

}  // namespace agency::app
