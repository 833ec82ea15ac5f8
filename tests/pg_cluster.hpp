// A throwaway PostgreSQL cluster for the tests (scripts/pg-cluster.sh): one per test process,
// started on first use and stopped (and removed) at exit; or, when AGENCY_TEST_PG_DIR names a
// running one's directory (ctest's fixture), that one. Each test takes a fresh database on it.
#pragma once

#include <string>

namespace agency::testing {

// The URL of a new, empty database on the cluster. Throws std::runtime_error with what to do
// when no cluster can be started (the server binaries missing: CI installs them, so a test
// fails rather than skips).
std::string pg_fresh_database();

// Runs one SQL statement on the database at `url` (test set-up: a version bumped by hand).
void pg_exec(const std::string& url, const std::string& sql);

// The store "down" and back for the database at `url`: `open` false drops every connection to
// it and refuses new ones (ALTER DATABASE from the cluster's own database, since a database
// cannot refuse connections to itself); true lets them in again.
void pg_allow_connections(const std::string& url, bool open);

}  // namespace agency::testing
