// state migrate | export | import, and the store `serve` opens: SQLite by default, PostgreSQL
// when a state URL is given (several instances, docs/deploy.md).
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.hpp"

#include "app/commands.hpp"
#include "app/process.hpp"
#include "base/crypto.hpp"
#include "base/text.hpp"
#include "state/open_store.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"

namespace agency::app {

std::shared_ptr<state::Store> open_state(const std::string& state_url, const std::string& state_db,
                                         state::SchemaUpgrade upgrade) {
    // The process's clock, given here where the process starts (a test gives its own).
    const base::Clock* clock = &base::Clock::system();
    if (!state_url.empty()) return state::open_store(state_url, upgrade, clock);
    return state::open_store(state_db.empty() ? state::SqliteStore::default_path() : state_db,
                             upgrade, clock);
}

void require_shared_secret(const std::string& secret) {
    // Cursors, requestState and task cursors are sealed with it: an instance with another
    // secret (or a random one) would refuse what its peers hand out.
    if (secret.size() >= 32) return;
    throw std::runtime_error(
        std::string("a shared state store (--state-url) needs AGENCY_SERVER_SECRET") +
        (secret.empty() ? "" : " of at least 32 characters") +
        ", the same on every instance, so that a cursor or requestState made by one instance "
        "opens on the others; for example: export AGENCY_SERVER_SECRET=$(openssl rand -hex 32)");
}

std::string instance_name() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return std::string(host[0] ? host : "host") + "-" + std::to_string(::getpid()) + "-" +
           crypto::random_hex(3);
}

int run_state_migrate(const StateArgs& args) {
    auto store = open_state(args.state_url, args.state_db, state::SchemaUpgrade::migrate);
    const int version = store->schema_version();
    if (version == 0) {
        std::cout << "no state database at " << store->describe()
                  << " yet: agency-mcp serve creates it at its first write\n";
        return 0;
    }
    std::cout << "state store " << store->describe() << ": schema version " << version << "\n";
    return 0;
}

int run_state_export(const StateArgs& args) {
    auto store = open_state(args.state_url, args.state_db, state::SchemaUpgrade::refuse);
    std::ofstream file;
    if (!args.file.empty()) {
        // 0600 whatever the umask (an existing file too): the rows hold drafts and the log.
        const int fd = ::open(args.file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0 || ::fchmod(fd, 0600) != 0) {
            if (fd >= 0) ::close(fd);
            throw std::runtime_error("cannot write " + args.file + ": " +
                                     std::generic_category().message(errno));
        }
        ::close(fd);
        file.open(args.file, std::ios::trunc);
        if (!file) throw std::runtime_error("cannot write " + args.file);
    }
    std::ostream& out = args.file.empty() ? std::cout : file;
    std::size_t rows = 0;
    store->export_rows([&](const nlohmann::json& line) {
        // Control and bidi characters as \uXXXX: the same JSON, safe to print.
        out << base::terminal_safe_json(line.dump()) << '\n';
        ++rows;
    });
    out.flush();
    if (!out) throw std::runtime_error("writing the export failed");
    log::info("exported {} row(s) from {}", rows, store->describe());
    return 0;
}

int run_state_import(const StateArgs& args) {
    auto store = open_state(args.state_url, args.state_db, state::SchemaUpgrade::refuse);
    std::ifstream file;
    if (!args.file.empty()) {
        file.open(args.file);
        if (!file) throw std::runtime_error("cannot read " + args.file);
    }
    std::istream& in = args.file.empty() ? std::cin : file;
    std::string text;
    std::size_t line_no = 0, rows = 0;
    while (std::getline(in, text)) {
        ++line_no;
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto line = nlohmann::json::parse(text, nullptr, false);
        try {
            if (line.is_discarded()) throw state::StoreError("not JSON");
            store->import_row(line);
        } catch (const state::StoreError& e) {
            throw std::runtime_error(
                "line " + std::to_string(line_no) + ": " + e.what() + " (" +
                std::to_string(rows) +
                " row(s) imported before it; import into an empty store, from a file that "
                "`agency-mcp state export` wrote)");
        }
        ++rows;
    }
    log::info("imported {} row(s) into {}", rows, store->describe());
    return 0;
}

int run_state_backup(const StateArgs& args) {
    if (!args.state_url.empty())
        throw std::runtime_error(
            "state backup copies a SQLite state file; back up PostgreSQL with pg_dump: "
            "pg_dump --format=custom --file=" + args.file + " '" +
            state::PgStore::redact(args.state_url) +
            "' (docs/operations.md, \"Backups and restores\")");
    const std::string from = args.state_db.empty() ? state::SqliteStore::default_path()
                                                   : args.state_db;
    const auto made = state::SqliteStore::backup(from, args.file);
    std::cout << "backed up " << from << " (schema version " << made.schema_version << ", "
              << made.bytes << " bytes) to " << args.file << " (mode 0600)\n";
    return 0;
}

}  // namespace agency::app
