#include "app/process.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app/log_format.hpp"
#include "tools/kit/schemas.hpp"

namespace agency::app {

// A host that fills `${user_config.x}` in a bundle's environment (.mcpb) passes an optional
// value the person left empty as that literal text: a whole `${...}` is no value.
bool unfilled_placeholder(std::string_view value) {
    if (value.size() < 4 || !value.starts_with("${") || !value.ends_with('}')) return false;
    return std::all_of(value.begin() + 2, value.end() - 1, [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
    });
}

std::string env_or(const char* name, std::string fallback) {
    const char* v = std::getenv(name);
    return v && *v && !unfilled_placeholder(v) ? std::string(v) : fallback;
}

std::string read_secret_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::string value;
    std::getline(in, value);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    return value;
}

void setup_logging(const std::string& level, const std::string& file, const std::string& format) {
    auto formatter = make_log_formatter(format);  // a wrong format stops the start first
    std::shared_ptr<spdlog::logger> logger;
    if (file.empty()) {
        logger = spdlog::stderr_color_mt("agency-mcp");
    } else {
        try {
            logger = spdlog::basic_logger_mt("agency-mcp", file);  // appends
        } catch (const spdlog::spdlog_ex& e) {
            throw std::runtime_error("--log-file: cannot open " + file + " for appending (" +
                                     e.what() + ")");
        }
        logger->flush_on(spdlog::level::info);  // a file is read while the server runs
    }
    logger->set_formatter(std::move(formatter));
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(level));
}

// glibc's per-thread arenas would give memory back after nearly every call and take it again
// through page faults and TLB shootdowns. Fixed thresholds keep a little freed memory for reuse and
// stop the dynamic mmap threshold from chasing page-sized bodies; two arenas (not 8 per core) keep
// what is kept small.
void tune_malloc() {
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 2 * 1024 * 1024);
    mallopt(M_TOP_PAD, 256 * 1024);
}

void small_thread_stacks() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
    return;
#endif
#endif
    constexpr std::size_t kThreadStack = 512 * 1024;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    if (pthread_attr_setstacksize(&attr, kThreadStack) == 0) pthread_setattr_default_np(&attr);
    pthread_attr_destroy(&attr);
}

// Start-up touches ~200 fresh heap pages, and on a virtual machine each first touch is a trip
// to the hypervisor. One MADV_POPULATE_WRITE (Linux 5.14+; elsewhere a no-op)
// maps the heap start-up will use in one call; freed, it stays in the heap's top for reuse
// (under M_TRIM_THRESHOLD, so it is not given back).
void prefault_heap() {
#ifdef MADV_POPULATE_WRITE
    constexpr std::size_t kStartupHeap = 768 * 1024;  // under M_MMAP_THRESHOLD: from the heap
    void* block = std::malloc(kStartupHeap);
    if (block == nullptr) return;
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<std::uintptr_t>(block) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(block) + kStartupHeap) & ~(page - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
    std::free(block);
#endif
}

// Parses every embedded tool schema (start-up's largest piece of work) on a thread of its own
// while main opens the state database and waits on the gateway check; registration then
// finds them parsed. A schema that fails to parse is left for registration to report.
std::jthread warm_schemas() {
    return std::jthread([] {
        try {
            // Last to first: registration, on the main thread, asks for them roughly first to
            // last, so the two threads meet rather than parse the same schemas.
            const auto& all = agency::tools::embedded_schemas();
            for (auto it = all.rbegin(); it != all.rend(); ++it) agency::tools::schema(it->name);
        } catch (const std::exception&) {
        }
    });
}

// Every open connection is a file descriptor: take the hard limit (the soft one is often
// 1024), and keep the connection bound under it with room for the rest of the process.
std::size_t fit_connections_to_fd_limit(std::size_t wanted) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
        ::getrlimit(RLIMIT_NOFILE, &limit);
    }
    constexpr rlim_t reserve = 128;  // state database, gateway connections, logs
    if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted + reserve) return wanted;
    const std::size_t fits =
        limit.rlim_cur > 2 * reserve ? limit.rlim_cur - reserve : limit.rlim_cur / 2;
    spdlog::warn("only {} file descriptors allowed: at most {} HTTP connections (not {})",
                 limit.rlim_cur, fits, wanted);
    return fits;
}

namespace thread_room {

// The first number after `key` in a /proc-style file ("Threads:\t12"); nullopt when absent.
std::optional<std::uint64_t> field(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with(key)) {
            const auto at = line.find_first_of("0123456789", key.size());
            if (at == std::string::npos) return std::nullopt;
            return std::strtoull(line.c_str() + at, nullptr, 10);
        }
    return std::nullopt;
}

std::optional<std::uint64_t> number_in(const std::string& path) {
    std::ifstream in(path);
    std::uint64_t n = 0;
    if (in >> n) return n;
    return std::nullopt;
}

// Threads of processes whose real uid is `uid` (what RLIMIT_NPROC counts).
std::uint64_t threads_of_user(uid_t uid) {
    std::uint64_t n = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string status = entry.path().string() + "/status";
        if (field(status, "Uid:") == uid) n += field(status, "Threads:").value_or(0);
    }
    return n;
}

// CAP_SYS_ADMIN or CAP_SYS_RESOURCE exempts the process from RLIMIT_NPROC.
bool nproc_exempt() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with("CapEff:")) {
            const std::uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
            return (caps >> 21 & 1) || (caps >> 24 & 1);
        }
    return false;
}

// How many more threads may be created here, and what bounds it; nullopt: nothing known.
std::optional<std::pair<std::uint64_t, std::string>> room() {
    std::optional<std::pair<std::uint64_t, std::string>> best;
    auto consider = [&](std::uint64_t limit, std::uint64_t used, std::string what) {
        const std::uint64_t left = limit > used ? limit - used : 0;
        if (!best || left < best->first)
            best = {left, what + " " + std::to_string(limit) + ", " + std::to_string(used) +
                              " in use"};
    };
    rlimit limit{};
    if (::getrlimit(RLIMIT_NPROC, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        !nproc_exempt())
        consider(limit.rlim_cur, threads_of_user(::getuid()), "RLIMIT_NPROC (ulimit -u)");
    if (auto max = number_in("/proc/sys/kernel/threads-max")) {
        std::ifstream loadavg("/proc/loadavg");  // "0.1 0.2 0.3 running/total last-pid"
        std::string a, b, c, counts;
        if (loadavg >> a >> b >> c >> counts && counts.find('/') != std::string::npos)
            consider(*max, std::strtoull(counts.c_str() + counts.find('/') + 1, nullptr, 10),
                     "kernel.threads-max");
    }
    // cgroup v2 pids controller (containers): pids.max less pids.current.
    std::ifstream cgroup("/proc/self/cgroup");
    std::string line;
    while (std::getline(cgroup, line))
        if (line.starts_with("0::")) {
            const std::string dir = "/sys/fs/cgroup" + line.substr(3);
            auto max = number_in(dir + "/pids.max");  // "max" reads as nothing
            auto current = number_in(dir + "/pids.current");
            if (max && current) consider(*max, *current, "cgroup pids.max");
        }
    return best;
}

}  // namespace thread_room

std::size_t fit_tasks_to_thread_limit(std::size_t wanted, std::size_t headroom) {
    const auto room = thread_room::room();
    if (!room || room->first >= wanted + headroom) return wanted;
    const std::size_t fits =
        room->first > 2 * headroom ? room->first - headroom : std::max<std::uint64_t>(1, room->first / 4);
    spdlog::warn("threads are bounded ({}): at most {} MCP tasks at once (not {}), keeping {} "
                 "threads for the rest",
                 room->second, fits, wanted, headroom);
    return fits;
}

namespace {
// A self-pipe: the handler (any thread) writes a byte, whoever waits polls the read end.
int g_stop_pipe[2] = {-1, -1};
void on_signal(int) {
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_stop_pipe[1], &byte, 1);
}
}  // namespace

int catch_stop_signals() {
    if (g_stop_pipe[0] >= 0) return g_stop_pipe[0];
    if (::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw std::runtime_error("cannot create the signal pipe");
    struct sigaction action {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART;  // other threads' system calls carry on
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    return g_stop_pipe[0];
}

void wait_for_signal() {
    pollfd stop{catch_stop_signals(), POLLIN, 0};
    while (::poll(&stop, 1, -1) < 0 && errno == EINTR) {
    }
}

}  // namespace agency::app
