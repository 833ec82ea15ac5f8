#include "state/write_log_spool.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "base/crypto.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

namespace {

using json = nlohmann::json;

std::string errno_text(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

// The spool file opened and locked exclusively, and still the file its path names: a drain
// that replaced it while this process waited for the lock is seen, and the new one opened.
class LockedFile {
public:
    explicit LockedFile(const std::string& path, bool create) {
        for (int tries = 0; tries < 16; ++tries) {
            fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
            if (fd_ < 0) {
                if (!create && errno == ENOENT) return;
                throw std::runtime_error(errno_text("cannot open " + path));
            }
            if (::flock(fd_, LOCK_EX) != 0) throw std::runtime_error(errno_text("cannot lock " + path));
            struct stat held{};
            struct stat named{};
            if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
                held.st_ino == named.st_ino && held.st_dev == named.st_dev)
                return;
            ::close(fd_);
            fd_ = -1;
        }
        throw std::runtime_error("cannot hold " + path + ": it is replaced over and over");
    }
    LockedFile(const LockedFile&) = delete;
    LockedFile& operator=(const LockedFile&) = delete;
    ~LockedFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    int fd() const { return fd_; }
    bool open() const { return fd_ >= 0; }

    std::size_t size() const {
        struct stat st{};
        return ::fstat(fd_, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
    }
    // The whole file (never more than `at_most` bytes).
    std::string read_all(std::size_t at_most) const {
        std::string text(std::min(size(), at_most), '\0');
        std::size_t got = 0;
        while (got < text.size()) {
            const ssize_t n = ::pread(fd_, text.data() + got, text.size() - got,
                                      static_cast<off_t>(got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        text.resize(got);
        return text;
    }

private:
    int fd_ = -1;
};

void write_all(int fd, std::string_view text, const std::string& path) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(errno_text("cannot write " + path));
        text.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Appends `text` to `path` (created 0600), flushed to disk.
void append_file(const std::string& path, std::string_view text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error(errno_text("cannot open " + path));
    try {
        write_all(fd, text, path);
        ::fdatasync(fd);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
}

std::size_t count_lines(std::string_view text) {
    std::size_t n = 0;
    for (char c : text) n += c == '\n';
    return n;
}

std::string text_of(const json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string new_write_log_id() {
    static std::atomic<std::uint64_t> appended{0};
    char order[17];
    std::snprintf(order, sizeof order, "%016llx",
                  static_cast<unsigned long long>(appended.fetch_add(1)));
    return "wl_" + std::string(order) + crypto::random_hex(6);
}

WriteLogSpool::WriteLogSpool(std::string path) : path_(std::move(path)) {
    if (path_.empty()) return;
    try {
        LockedFile f(path_, false);
        if (f.open()) waiting_ = count_lines(f.read_all(kMaxFileBytes));
    } catch (const std::exception&) {
        waiting_ = 0;  // unreadable now: keep and drain say why when they run
    }
}

json WriteLogSpool::to_line(const WriteLogEntry& e, const Store::Settlement& s) {
    return {{"id", e.id},
            {"at_ms", e.at_ms},
            {"principal", e.principal},
            {"tool", e.tool},
            {"client_id", e.client_id},
            {"args_digest", e.args_digest},
            {"args_summary", e.args_summary},
            {"confirmation", e.confirmation},
            {"confirmation_ref", e.confirmation_ref},
            {"outcome", e.outcome},
            {"reason", e.reason},
            {"record_id", e.record_id},
            {"replayed", e.replayed},
            {"detail", e.detail},
            {"caller_clients", e.caller_clients},
            {"settle",
             {{"principal", s.principal},
              {"tool", s.tool},
              {"key", s.key},
              {"is_error", s.is_error},
              {"result", s.result},
              {"slot_id", s.slot_id}}}};
}

std::optional<std::pair<WriteLogEntry, Store::Settlement>> WriteLogSpool::from_line(
    const json& line) {
    if (!line.is_object()) return std::nullopt;
    WriteLogEntry e;
    e.id = text_of(line, "id");
    e.tool = text_of(line, "tool");
    e.outcome = text_of(line, "outcome");
    const auto at = line.find("at_ms");
    if (e.id.rfind("wl_", 0) != 0 || e.tool.empty() || e.outcome.empty() || at == line.end() ||
        !at->is_number_integer())
        return std::nullopt;
    e.at_ms = at->get<std::int64_t>();
    e.principal = text_of(line, "principal");
    e.client_id = text_of(line, "client_id");
    e.args_digest = text_of(line, "args_digest");
    const auto summary = line.find("args_summary");
    e.args_summary = summary != line.end() && summary->is_object() ? *summary : json::object();
    e.confirmation = text_of(line, "confirmation");
    e.confirmation_ref = text_of(line, "confirmation_ref");
    e.reason = text_of(line, "reason");
    e.record_id = text_of(line, "record_id");
    e.replayed = line.value("replayed", json(false)) == true;
    e.detail = text_of(line, "detail");
    e.caller_clients = line.contains("caller_clients") ? text_of(line, "caller_clients") : "*";
    Store::Settlement s;
    const json settle = line.value("settle", json::object());
    if (settle.is_object()) {
        s.principal = text_of(settle, "principal");
        s.tool = text_of(settle, "tool");
        s.key = text_of(settle, "key");
        s.is_error = settle.value("is_error", json(false)) == true;
        s.result = text_of(settle, "result");
        s.slot_id = text_of(settle, "slot_id");
    }
    return std::make_pair(std::move(e), std::move(s));
}

std::string WriteLogSpool::keep(const WriteLogEntry& entry, const Store::Settlement& settle) {
    std::lock_guard lock(mutex_);
    if (path_.empty()) {
        if (memory_.size() >= kMaxMemoryRows)
            return "the in-memory spool holds its most (" + std::to_string(kMaxMemoryRows) +
                   " rows)";
        memory_.emplace_back(entry, settle);
        waiting_ = memory_.size();
        return {};
    }
    const std::string line = to_line(entry, settle).dump() + "\n";
    if (line.size() > kMaxLineBytes)
        return "the row with its result is " + std::to_string(line.size()) +
               " bytes, more than a spool line holds";
    try {
        const auto parent = std::filesystem::path(path_).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent);
        LockedFile f(path_, true);
        if (f.size() + line.size() > kMaxFileBytes)
            return path_ + " holds its most (" + std::to_string(kMaxFileBytes >> 20) + " MiB)";
        if (::lseek(f.fd(), 0, SEEK_END) < 0) return errno_text("cannot seek " + path_);
        write_all(f.fd(), line, path_);
        if (::fdatasync(f.fd()) != 0) return errno_text("cannot flush " + path_);
        waiting_ = count_lines(f.read_all(kMaxFileBytes));
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

WriteLogSpool::Drained WriteLogSpool::drain(Store& store) {
    std::lock_guard lock(mutex_);
    Drained out;
    if (path_.empty()) {
        while (!memory_.empty()) {
            try {
                store.append_write_log_settling(memory_.front().first, memory_.front().second);
            } catch (const std::exception& e) {
                out.error = e.what();
                break;
            }
            memory_.pop_front();
            ++out.appended;
        }
        out.left = waiting_ = memory_.size();
        return out;
    }
    try {
        LockedFile f(path_, false);
        if (!f.open()) {
            waiting_ = 0;
            return out;
        }
        const std::string text = f.read_all(kMaxFileBytes + kMaxLineBytes);
        std::string left;
        std::string bad;
        std::size_t start = 0;
        while (start < text.size()) {
            std::size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();  // a line cut by a crash
            const std::string_view raw(text.data() + start, end - start);
            start = end + 1;
            if (raw.empty()) continue;
            if (!out.error.empty()) {
                left.append(raw).push_back('\n');
                ++out.left;
                continue;
            }
            const json parsed = raw.size() <= kMaxLineBytes
                                    ? json::parse(raw, nullptr, false, false)
                                    : json();
            const auto row = from_line(parsed);
            if (!row) {
                bad.append(raw).push_back('\n');
                ++out.unreadable;
                continue;
            }
            try {
                store.append_write_log_settling(row->first, row->second);
                ++out.appended;
            } catch (const std::exception& e) {
                out.error = e.what();
                left.append(raw).push_back('\n');
                ++out.left;
            }
        }
        if (!bad.empty()) append_file(path_ + ".bad", bad);
        if (left.empty()) {
            if (::ftruncate(f.fd(), 0) != 0) throw std::runtime_error(errno_text("cannot empty " + path_));
            ::fdatasync(f.fd());
        } else if (out.appended > 0 || out.unreadable > 0) {
            // What is left replaces the file whole (a process waiting for the lock sees the
            // new file and opens it).
            const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
            ::unlink(tmp.c_str());
            append_file(tmp, left);
            if (::rename(tmp.c_str(), path_.c_str()) != 0)
                throw std::runtime_error(errno_text("cannot replace " + path_));
        }
        waiting_ = out.left;
    } catch (const std::exception& e) {
        if (out.error.empty()) out.error = e.what();
    }
    return out;
}

std::size_t WriteLogSpool::waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_;
}

std::string WriteLogSpool::beside(const std::string& state_url, const std::string& state_db) {
    if (!state_url.empty()) {
        const std::filesystem::path db(SqliteStore::default_path());
        return (db.parent_path() / "write-log.spool").string();
    }
    const std::string db = state_db.empty() ? SqliteStore::default_path() : state_db;
    if (db == ":memory:") return {};
    return db + ".write-log-spool";
}

}  // namespace agency::state
