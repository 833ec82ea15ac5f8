#include "pg_cluster.hpp"
#include "tests/support/paths.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include <libpq-fe.h>

#include "base/crypto.hpp"

namespace agency::testing {

namespace {

namespace fs = std::filesystem;

const std::string kScript = std::string(AGENCY_SOURCE_DIR) + "/scripts/pg-cluster.sh";

struct Cluster {
    std::string dir;  // empty when it is not ours to stop
    std::string url;  // postgres://agency@127.0.0.1:PORT/postgres
    std::string error;

    Cluster() {
        if (const char* shared = std::getenv("AGENCY_TEST_PG_DIR"); shared && *shared) {
            std::ifstream in(fs::path(shared) / "url");
            if (std::getline(in, url) && !url.empty()) return;
            error = std::string("AGENCY_TEST_PG_DIR=") + shared + " has no url file";
            return;
        }
        dir = (fs::temp_directory_path() / ("agency-pg-" + crypto::random_hex(6))).string();
        const std::string command = "bash '" + kScript + "' start '" + dir + "'";
        FILE* out = ::popen(command.c_str(), "r");
        char line[512] = {};
        if (out && std::fgets(line, sizeof line, out)) url = line;
        const int status = out ? ::pclose(out) : -1;
        while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
        if (status != 0 || url.empty()) {
            error = "cannot start a PostgreSQL cluster for the tests (" + command +
                    " failed; its messages are above): install Debian's postgresql package "
                    "(scripts/install-deps.sh)";
            url.clear();
        }
    }
    ~Cluster() {
        if (!dir.empty())
            (void)std::system(
                ("bash '" + kScript + "' stop '" + dir + "' >/dev/null 2>&1").c_str());
    }
};

Cluster& cluster() {
    static Cluster c;  // stopped by its destructor at exit
    return c;
}

std::string with_database(const std::string& url, const std::string& name) {
    return url.substr(0, url.rfind('/') + 1) + name;
}

}  // namespace

void pg_exec(const std::string& url, const std::string& sql) {
    PGconn* conn = PQconnectdb(url.c_str());
    std::string error;
    if (PQstatus(conn) != CONNECTION_OK) {
        error = PQerrorMessage(conn);
    } else {
        PGresult* r = PQexec(conn, sql.c_str());
        const auto status = PQresultStatus(r);
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
            error = PQresultErrorMessage(r);
        PQclear(r);
    }
    PQfinish(conn);
    if (!error.empty()) throw std::runtime_error(sql + ": " + error);
}

std::string pg_fresh_database() {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    Cluster& c = cluster();
    if (c.url.empty()) throw std::runtime_error(c.error);
    const std::string name = "t_" + crypto::random_hex(8);
    pg_exec(c.url, "CREATE DATABASE " + name);
    return with_database(c.url, name);
}

void pg_allow_connections(const std::string& url, bool open) {
    const std::string name = url.substr(url.rfind('/') + 1);
    std::string sql = "ALTER DATABASE " + name + " ALLOW_CONNECTIONS " +
                      (open ? "true" : "false");
    if (!open)
        sql += "; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" +
               name + "'";
    pg_exec(url.substr(0, url.rfind('/') + 1) + "postgres", sql);
}

}  // namespace agency::testing
