// The write log's rows the store could not take when they happened (issue 45, finding 8: an
// action that ran while PostgreSQL was down left no row). Each is kept in a local file, one
// JSON line with the settlement that went with it (the idempotency key to complete, the
// credit slot to release), flushed to disk, and appended when the store answers again, with
// its own time. A row's id is fixed when it is kept and appending an id the log already has
// changes nothing, so a drain cut short (a crash, a second process draining the same file)
// never doubles a row. Several processes may share the file: every change holds an exclusive
// lock on it and replaces it whole. Path "" keeps the rows in this process's memory (a
// `:memory:` store's, the tests').
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "state/store.hpp"

namespace agency::state {

class WriteLogSpool {
public:
    // Bounds: a line (a row and its settlement's result) and the whole file. A row past them
    // is not kept (keep says so; the caller logs it whole).
    static constexpr std::size_t kMaxLineBytes = 4u << 20;
    static constexpr std::size_t kMaxFileBytes = 256u << 20;
    static constexpr std::size_t kMaxMemoryRows = 10'000;

    explicit WriteLogSpool(std::string path);

    const std::string& path() const { return path_; }

    // Keeps one row (its id and time already set) and its settlement. "" when kept, else why not.
    std::string keep(const WriteLogEntry& entry, const Store::Settlement& settle);

    struct Drained {
        std::size_t appended = 0;  // rows the store took
        std::size_t left = 0;      // rows still kept (the store failed again)
        std::size_t unreadable = 0;  // lines that were not a row (set aside in path + ".bad")
        std::string error;         // the store's error that stopped the drain ("" when none)
    };
    // Appends what is kept, oldest first, until the store fails. Throws nothing.
    Drained drain(Store& store);

    // Rows kept, as this process last saw the file.
    std::size_t waiting() const;

    // Where serve keeps the spool for a store: beside the SQLite file (`<db>.write-log-spool`),
    // in memory for ":memory:", and for PostgreSQL (a `state_url`) in the directory of the
    // default SQLite file (`~/.local/state/agency-mcp/write-log.spool`, the same for every
    // instance on the machine: the lock orders them).
    static std::string beside(const std::string& state_url, const std::string& state_db);

    // A row and its settlement as one spool line, and back (nullopt: not a row).
    static nlohmann::json to_line(const WriteLogEntry& entry, const Store::Settlement& settle);
    static std::optional<std::pair<WriteLogEntry, Store::Settlement>> from_line(
        const nlohmann::json& line);

private:
    std::string path_;
    mutable std::mutex mutex_;  // this process's threads; the file lock orders processes
    std::deque<std::pair<WriteLogEntry, Store::Settlement>> memory_;
    std::size_t waiting_ = 0;
};

}  // namespace agency::state
