// agency_bench_driver: the benchmark's load driver. Raw JSON-RPC to an MCP server over stdio
// (the driver spawns the server and pipelines C requests over the pipe) or over Streamable HTTP
// (C keep-alive connections), or plain GET page reads straight to the gateway (the baseline).
// Reports calls/s, p50/p90/p99 latency, its own CPU, and the server's CPU and memory read from
// /proc/PID. One JSON object on stdout; exit status 1 when any answer was not a success.
//
// Every loop is bounded: N requests, and --max-seconds of wall time at most.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simdjson.h>

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kProtocolVersion = "2025-11-25";  // legacy era: initialize + session
constexpr const char* kModernVersion = "2026-07-28";    // stateless: no session, _meta

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

[[noreturn]] void die(const std::string& message) {
    std::fprintf(stderr, "agency_bench_driver: %s\n", message.c_str());
    std::exit(2);
}

// --- options ---------------------------------------------------------------------------------

struct Options {
    std::string transport = "stdio";  // stdio | http | gateway
    std::string url;                  // http: http://127.0.0.1:PORT/mcp; gateway: base URL
    std::string tool = "list_keywords";
    std::string args = R"({"client_id":"demo-plumbing","limit":100})";
    std::string path;  // gateway: path and query of one read, e.g. /api?resource=keywords&...
    bool scan = false;  // gateway: page on (offset += limit) until has_more is false
    long scan_pages = 0;  // gateway --scan: stop after this many pages (0: at the end)
    long requests = 1000;
    long warmup = 0;
    int concurrency = 1;
    double max_seconds = 120;
    long rss_every = 0;      // sample the server's VmRSS after every this many calls
    bool cold_start = false;  // measure spawn → first answered tools/call, then stop
    bool tools_list = false;  // record the byte size of the tools/list answer
    int server_pid = 0;       // a server the driver did not spawn (http)
    double stop_grace = 5;    // seconds a stdio server gets to stop after end of input
    std::vector<std::string> command;  // after "--": the server to spawn
};

// A loopback port free at the moment of asking (bind to port 0, read it, release it).
int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        die("cannot find a free port");
    ::close(fd);
    return ntohs(addr.sin_port);
}

Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) die("missing value for " + a);
            return argv[++i];
        };
        if (a == "--") {
            for (++i; i < argc; ++i) o.command.emplace_back(argv[i]);
            break;
        }
        if (a == "--transport") o.transport = value();
        else if (a == "--url") o.url = value();
        else if (a == "--tool") o.tool = value();
        else if (a == "--args") o.args = value();
        else if (a == "--path") o.path = value();
        else if (a == "--scan") o.scan = true;
        else if (a == "--scan-pages") o.scan_pages = std::stol(value());
        else if (a == "-n" || a == "--requests") o.requests = std::stol(value());
        else if (a == "--warmup") o.warmup = std::stol(value());
        else if (a == "-c" || a == "--concurrency") o.concurrency = std::stoi(value());
        else if (a == "--max-seconds") o.max_seconds = std::stod(value());
        else if (a == "--rss-every") o.rss_every = std::stol(value());
        else if (a == "--cold-start") o.cold_start = true;
        else if (a == "--tools-list") o.tools_list = true;
        else if (a == "--pid") o.server_pid = std::stoi(value());
        else if (a == "--stop-grace") o.stop_grace = std::stod(value());
        else if (a == "--help" || a == "-h") {
            std::puts(
                "agency_bench_driver --transport stdio|http|modern|gateway [-n N] [-c C] [--warmup W]\n"
                "  [--tool NAME --args JSON]   ({i} in JSON: the request's index)\n"
                "  [--url URL] [--path /api?...] [--scan] [--scan-pages N] [--pid PID] [--rss-every K]\n"
                "  [--cold-start] [--tools-list] [--max-seconds S] [-- SERVER COMMAND...]");
            std::exit(0);
        } else die("unknown option " + a);
    }
    if (o.concurrency < 1 || o.requests < 0) die("bad -n or -c");
    // {port} in the URL and the command: a free loopback port picked here.
    bool wants_port = o.url.find("{port}") != std::string::npos;
    for (const auto& s : o.command) wants_port |= s.find("{port}") != std::string::npos;
    if (wants_port) {
        const std::string port = std::to_string(free_port());
        auto sub = [&](std::string& s) {
            for (std::size_t p; (p = s.find("{port}")) != std::string::npos;) s.replace(p, 6, port);
        };
        sub(o.url);
        for (auto& s : o.command) sub(s);
    }
    if (o.transport == "stdio" && o.command.empty()) die("stdio needs a server command after --");
    if (o.transport != "stdio" && o.url.empty()) die("--url is needed for " + o.transport);
    return o;
}

// --- /proc ------------------------------------------------------------------------------------

// utime + stime of a process, in seconds.
double process_cpu_seconds(int pid) {
    if (pid <= 0) return 0;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    // Fields after the command: state(3) ... utime(14) stime(15).
    std::vector<std::string> fields;
    while (rest >> field && fields.size() < 13) fields.push_back(field);
    if (fields.size() < 13) return 0;
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
}

// A "VmRSS"/"VmHWM" line of /proc/PID/status, in KiB (0 when unknown).
long process_status_kib(int pid, const char* key) {
    if (pid <= 0) return 0;
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    const std::size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
            return std::atol(line.c_str() + n + 1);
    return 0;
}

double self_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

// --- answers ----------------------------------------------------------------------------------

struct Answer {
    long id = -1;
    bool ok = false;
    std::string why;  // when not ok
};

// Reads a JSON-RPC response's id and whether it succeeded (a result that is not isError).
// simdjson skips the values it is not asked about, so a large page costs little here.
Answer inspect(std::string_view text, simdjson::ondemand::parser& parser) {
    Answer a;
    simdjson::padded_string padded(text);
    simdjson::ondemand::document doc;
    if (parser.iterate(padded).get(doc)) {
        a.why = "unparsable answer";
        return a;
    }
    simdjson::ondemand::object top;
    if (doc.get_object().get(top)) {
        a.why = "answer is not an object";
        return a;
    }
    bool has_result = false;
    for (auto field : top) {
        std::string_view key;
        if (field.unescaped_key().get(key)) break;
        if (key == "id") {
            int64_t id = -1;
            if (!field.value().get_int64().get(id)) a.id = id;
        } else if (key == "error") {
            a.why = "error answer: " + std::string(text.substr(0, 300));
        } else if (key == "result") {
            has_result = true;
            simdjson::ondemand::object result;
            if (field.value().get_object().get(result)) continue;
            for (auto member : result) {
                std::string_view name;
                if (member.unescaped_key().get(name)) break;
                if (name == "isError") {
                    bool is_error = false;
                    if (!member.value().get_bool().get(is_error) && is_error) {
                        a.why = "tool error: " + std::string(text.substr(0, 400));
                        has_result = false;
                    }
                }
            }
        }
    }
    a.ok = has_result && a.why.empty();
    if (!has_result && a.why.empty()) a.why = "no result";
    return a;
}

// Fills {i} in a request template.
std::string fill(const std::string& templ, long i) {
    std::string out;
    std::size_t at = 0;
    for (std::size_t p; (p = templ.find("{i}", at)) != std::string::npos; at = p + 3)
        out.append(templ, at, p - at).append(std::to_string(i));
    return out.append(templ, at);
}

std::string call_body(const Options& o, long id) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":")" + o.tool + R"(","arguments":)" +
           fill(o.args, id) + "}}";
}

// The same call in the 2026-07-28 era: the version and capabilities in _meta, no session.
std::string modern_call_body(const Options& o, long id) {
    std::string body = call_body(o, id);
    body.insert(body.size() - 2, std::string(R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":")") +
                                     kModernVersion +
                                     R"(","io.modelcontextprotocol/clientCapabilities":{}})");
    return body;
}

std::string initialize_body() {
    return std::string(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")") +
           kProtocolVersion +
           R"(","capabilities":{},"clientInfo":{"name":"agency-bench-driver","version":"1"}}})";
}
const char* kInitialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
const char* kToolsList = R"({"jsonrpc":"2.0","id":-1,"method":"tools/list","params":{}})";

// --- results ----------------------------------------------------------------------------------

struct Stats {
    std::vector<double> latency_ms;  // measured calls only
    long ok = 0;
    long failed = 0;
    std::string first_failure;
    std::vector<std::pair<long, long>> rss_samples;  // (calls done, VmRSS KiB)
    std::mutex mutex;

    void record(const Answer& a, double ms, bool measured) {
        std::lock_guard lock(mutex);
        if (a.ok) ++ok;
        else {
            ++failed;
            if (first_failure.empty()) first_failure = a.why;
        }
        if (measured) latency_ms.push_back(ms);
    }
};

double percentile(std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const double rank = p / 100.0 * double(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(rank);
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
        else out += c;
    }
    return out;
}

// --- spawning ---------------------------------------------------------------------------------

struct Child {
    pid_t pid = 0;
    int in = -1;   // its stdin (stdio)
    int out = -1;  // its stdout (stdio)
};

Child spawn(const std::vector<std::string>& command, bool pipes) {
    int to_child[2] = {-1, -1};
    int from_child[2] = {-1, -1};
    if (pipes && (pipe(to_child) != 0 || pipe(from_child) != 0)) die("pipe failed");
    pid_t pid = fork();
    if (pid < 0) die("fork failed");
    if (pid == 0) {
        if (pipes) {
            dup2(to_child[0], 0);
            dup2(from_child[1], 1);
            close(to_child[0]), close(to_child[1]), close(from_child[0]), close(from_child[1]);
        } else {
            int null = open("/dev/null", O_RDONLY);
            dup2(null, 0);
            int err = 2;
            dup2(err, 1);
        }
        std::vector<char*> argv;
        for (const auto& s : command) argv.push_back(const_cast<char*>(s.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "agency_bench_driver: cannot run %s: %s\n", argv[0],
                     std::strerror(errno));
        _exit(127);
    }
    Child c;
    c.pid = pid;
    if (pipes) {
        close(to_child[0]);
        close(from_child[1]);
        c.in = to_child[1];
        c.out = from_child[0];
    }
    return c;
}

// Ends a spawned server: end of input first (stdio servers finish then), SIGTERM after a while.
void finish(Child& c, double grace_s) {
    if (c.in >= 0) close(c.in), c.in = -1;
    const auto start = Clock::now();
    int status = 0;
    bool sent_term = false;
    while (true) {
        pid_t r = waitpid(c.pid, &status, WNOHANG);
        if (r == c.pid || r < 0) break;
        if (!sent_term && seconds_since(start) > grace_s) {
            kill(c.pid, SIGTERM);
            sent_term = true;
        }
        if (seconds_since(start) > grace_s + 10) {
            kill(c.pid, SIGKILL);
            waitpid(c.pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (c.out >= 0) close(c.out), c.out = -1;
}

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// --- stdio ------------------------------------------------------------------------------------

class LineReader {
public:
    explicit LineReader(int fd) : fd_(fd) {}
    // The next line, or nullopt at end of input or after `deadline`.
    std::optional<std::string> next(Clock::time_point deadline) {
        while (true) {
            auto nl = buffer_.find('\n', start_);
            if (nl != std::string::npos) {
                std::string line = buffer_.substr(start_, nl - start_);
                start_ = nl + 1;
                if (start_ > (1 << 20)) buffer_.erase(0, start_), start_ = 0;
                return line;
            }
            pollfd p{fd_, POLLIN, 0};
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - Clock::now()).count();
            if (left <= 0) return std::nullopt;
            int r = poll(&p, 1, static_cast<int>(std::min<long>(left, 1000)));
            if (r < 0 && errno != EINTR) return std::nullopt;
            if (r <= 0) continue;
            char chunk[65536];
            ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return std::nullopt;
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }

private:
    int fd_;
    std::string buffer_;
    std::size_t start_ = 0;
};

// --- HTTP -------------------------------------------------------------------------------------

struct Url {
    std::string host;
    int port = 80;
    std::string path;
};

Url parse_url(const std::string& url) {
    const std::string prefix = "http://";
    if (url.compare(0, prefix.size(), prefix) != 0) die("only http:// URLs: " + url);
    Url u;
    auto rest = url.substr(prefix.size());
    auto slash = rest.find('/');
    auto hostport = rest.substr(0, slash);
    u.path = slash == std::string::npos ? "/" : rest.substr(slash);
    auto colon = hostport.rfind(':');
    u.host = hostport.substr(0, colon);
    if (colon != std::string::npos) u.port = std::stoi(hostport.substr(colon + 1));
    if (u.host != "127.0.0.1" && u.host != "localhost") die("loopback only: " + url);
    return u;
}

struct HttpResponse {
    int status = 0;
    std::string content_type;
    std::string session;
    std::string body;
};

class HttpConnection {
public:
    explicit HttpConnection(const Url& url) : url_(url) {}
    ~HttpConnection() { close_socket(); }
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    bool connect_once() {
        close_socket();
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0) return false;
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(url_.port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            close_socket();
            return false;
        }
        int one = 1;
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        buffer_.clear();
        return true;
    }

    // One request and its complete answer; reconnects once when a kept-alive socket was closed.
    std::optional<HttpResponse> exchange(const std::string& request, Clock::time_point deadline) {
        for (int attempt = 0; attempt < 2; ++attempt) {
            if (fd_ < 0 && !connect_once()) return std::nullopt;
            if (write_all(fd_, request)) {
                auto r = read_response(deadline);
                if (r) return r;
            }
            close_socket();
            if (Clock::now() >= deadline) break;
        }
        return std::nullopt;
    }

    std::string post_request(const std::string& body, const std::string& session,
                             const std::string& modern_tool = "") const {
        std::string r = "POST " + url_.path + " HTTP/1.1\r\nHost: " + url_.host + ":" +
                        std::to_string(url_.port) +
                        "\r\nContent-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\n"
                        "MCP-Protocol-Version: " +
                        (modern_tool.empty() ? kProtocolVersion : kModernVersion) + "\r\n";
        if (!modern_tool.empty())
            r += "Mcp-Method: tools/call\r\nMcp-Name: " + modern_tool + "\r\n";
        if (!session.empty()) r += "Mcp-Session-Id: " + session + "\r\n";
        r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
        return r += body;
    }

    std::string get_request(const std::string& path) const {
        return "GET " + path + " HTTP/1.1\r\nHost: " + url_.host + ":" +
               std::to_string(url_.port) + "\r\nAccept: application/json\r\n\r\n";
    }

private:
    void close_socket() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        buffer_.clear();
    }

    bool fill(Clock::time_point deadline) {
        while (true) {
            pollfd p{fd_, POLLIN, 0};
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - Clock::now()).count();
            if (left <= 0) return false;
            int r = poll(&p, 1, static_cast<int>(std::min<long>(left, 1000)));
            if (r < 0 && errno != EINTR) return false;
            if (r <= 0) continue;
            char chunk[65536];
            ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            buffer_.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
    }

    std::optional<HttpResponse> read_response(Clock::time_point deadline) {
        std::size_t head_end;
        while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
            if (!fill(deadline)) return std::nullopt;
        HttpResponse r;
        const std::string head = buffer_.substr(0, head_end);
        buffer_.erase(0, head_end + 4);
        if (head.size() < 12) return std::nullopt;
        r.status = std::atoi(head.c_str() + 9);
        long length = -1;
        bool chunked = false;
        bool close_after = false;
        std::size_t at = head.find("\r\n");
        while (at != std::string::npos) {
            std::size_t next = head.find("\r\n", at + 2);
            std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos
                                                                             : next - at - 2);
            at = next;
            auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string name = line.substr(0, colon);
            for (auto& ch : name) ch = static_cast<char>(std::tolower(ch));
            std::string value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.erase(0, 1);
            if (name == "content-length") length = std::atol(value.c_str());
            else if (name == "transfer-encoding") chunked = value.find("chunked") != std::string::npos;
            else if (name == "content-type") r.content_type = value;
            else if (name == "mcp-session-id") r.session = value;
            else if (name == "connection") close_after = value.find("close") != std::string::npos;
        }
        if (chunked) {
            while (true) {
                std::size_t line_end;
                while ((line_end = buffer_.find("\r\n")) == std::string::npos)
                    if (!fill(deadline)) return std::nullopt;
                const long size = std::strtol(buffer_.c_str(), nullptr, 16);
                buffer_.erase(0, line_end + 2);
                while (buffer_.size() < static_cast<std::size_t>(size) + 2)
                    if (!fill(deadline)) return std::nullopt;
                r.body.append(buffer_, 0, static_cast<std::size_t>(size));
                buffer_.erase(0, static_cast<std::size_t>(size) + 2);
                if (size == 0) break;
            }
        } else if (length >= 0) {
            while (buffer_.size() < static_cast<std::size_t>(length))
                if (!fill(deadline)) return std::nullopt;
            r.body = buffer_.substr(0, static_cast<std::size_t>(length));
            buffer_.erase(0, static_cast<std::size_t>(length));
        } else {
            while (fill(deadline)) {}
            r.body = std::move(buffer_);
            close_after = true;
        }
        if (close_after) close_socket();
        return r;
    }

    Url url_;
    int fd_ = -1;
    std::string buffer_;
};

// The JSON-RPC message of an MCP answer: the body, or the last `data:` event of an SSE stream.
std::string rpc_payload(const HttpResponse& r) {
    if (r.content_type.find("text/event-stream") == std::string::npos) return r.body;
    std::string last;
    std::string current;
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data:", 0) == 0) {
            current += line.substr(line[5] == ' ' ? 6 : 5);
        } else if (line.empty() && !current.empty()) {
            if (current.find("\"method\"") == std::string::npos) last = current;
            current.clear();
        }
    }
    if (!current.empty() && current.find("\"method\"") == std::string::npos) last = current;
    return last;
}

// --- the runs ---------------------------------------------------------------------------------

struct Run {
    Options o;
    Stats stats;
    int pid = 0;
    Child child;  // the spawned server, if any
    double wall_s = 0;
    double driver_cpu_s = 0;
    double server_cpu_s = 0;
    long idle_rss_kib = 0;
    long tools_list_bytes = 0;
    double cold_start_ms = 0;
    std::atomic<long> done{0};
    Clock::time_point deadline;

    void maybe_sample_rss(long completed) {
        if (o.rss_every > 0 && completed % o.rss_every == 0) {
            long kib = process_status_kib(pid, "VmRSS");
            std::lock_guard lock(stats.mutex);
            stats.rss_samples.emplace_back(completed, kib);
        }
    }
};

// stdio: one pipe, C requests in flight, answers matched by id.
void run_stdio(Run& run) {
    const Options& o = run.o;
    const auto spawned_at = Clock::now();
    run.child = spawn(o.command, true);
    Child& child = run.child;
    run.pid = child.pid;
    LineReader reader(child.out);
    simdjson::ondemand::parser parser;
    run.deadline = Clock::now() + std::chrono::milliseconds(long(o.max_seconds * 1000));

    auto expect = [&](long id) -> std::optional<std::string> {
        while (auto line = reader.next(run.deadline)) {
            Answer a = inspect(*line, parser);
            if (a.id == id) return line;
        }
        return std::nullopt;
    };
    // Cold start: everything is written at once, before the server has even started reading.
    std::string opening = initialize_body() + "\n" + kInitialized + "\n";
    if (o.cold_start) opening += call_body(o, 1) + "\n";
    if (!write_all(child.in, opening)) die("cannot write to the server");
    if (!expect(0)) die("no answer to initialize");
    if (o.cold_start) {
        auto line = expect(1);
        run.cold_start_ms = seconds_since(spawned_at) * 1000;
        Answer a = line ? inspect(*line, parser) : Answer{1, false, "no answer"};
        run.stats.record(a, run.cold_start_ms, true);
        run.idle_rss_kib = process_status_kib(run.pid, "VmRSS");
        return;
    }
    if (o.tools_list) {
        write_all(child.in, std::string(kToolsList) + "\n");
        auto line = expect(-1);
        run.tools_list_bytes = line ? long(line->size()) : -1;
    }
    // The idle figure (started, initialized, nothing called yet), warm-up, the measured run.
    run.idle_rss_kib = process_status_kib(run.pid, "VmRSS");
    long next_id = 1;
    auto pump = [&](long count, bool measured) {
        std::map<long, Clock::time_point> sent;
        long issued = 0, answered = 0;
        auto issue = [&] {
            const long id = next_id++;
            sent[id] = Clock::now();
            ++issued;
            return write_all(child.in, call_body(o, id) + "\n");
        };
        while (issued < count && long(sent.size()) < o.concurrency)
            if (!issue()) return;
        while (answered < count) {
            auto line = reader.next(run.deadline);
            if (!line) {
                std::lock_guard lock(run.stats.mutex);
                run.stats.failed += count - answered;
                if (run.stats.first_failure.empty())
                    run.stats.first_failure = "the server stopped answering (or --max-seconds)";
                return;
            }
            Answer a = inspect(*line, parser);
            auto it = sent.find(a.id);
            if (it == sent.end()) continue;  // a notification or a stray answer
            const double ms =
                std::chrono::duration<double, std::milli>(Clock::now() - it->second).count();
            sent.erase(it);
            ++answered;
            run.stats.record(a, ms, measured);
            if (measured) run.maybe_sample_rss(++run.done);
            if (issued < count && Clock::now() < run.deadline)
                if (!issue()) return;
            if (issued < count && Clock::now() >= run.deadline && sent.empty()) {
                // Out of time: count the rest as not done.
                std::lock_guard lock(run.stats.mutex);
                run.stats.failed += count - issued;
                run.stats.first_failure = "stopped by --max-seconds";
                return;
            }
        }
    };
    pump(o.warmup, false);
    run.stats.ok = 0;
    const double cpu0 = process_cpu_seconds(run.pid);
    const double self0 = self_cpu_seconds();
    const auto t0 = Clock::now();
    pump(o.requests, true);
    run.wall_s = seconds_since(t0);
    run.server_cpu_s = process_cpu_seconds(run.pid) - cpu0;
    run.driver_cpu_s = self_cpu_seconds() - self0;
}

// HTTP: C keep-alive connections on C threads; MCP (one legacy session, or stateless 2026-07-28
// requests with --transport modern) or gateway GETs.
void run_http(Run& run) {
    const Options& o = run.o;
    const Url url = parse_url(o.url);
    Child& child = run.child;
    const auto spawned_at = Clock::now();
    run.deadline = Clock::now() + std::chrono::milliseconds(long(o.max_seconds * 1000));
    if (!o.command.empty()) {
        child = spawn(o.command, false);
        run.pid = child.pid;
    } else {
        run.pid = o.server_pid;
    }
    const bool modern = o.transport == "modern";
    const bool mcp = o.transport == "http" || modern;
    simdjson::ondemand::parser parser;

    std::string session;
    {
        // Wait for the listener (a spawned server), then open the session.
        HttpConnection first(url);
        while (!first.connect_once()) {
            if (Clock::now() > run.deadline) die("cannot connect to " + o.url);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        if (mcp && !modern) {
            auto r = first.exchange(first.post_request(initialize_body(), ""), run.deadline);
            if (!r || r->status != 200) die("initialize failed");
            session = r->session;
            first.exchange(first.post_request(kInitialized, session), run.deadline);
            if (o.cold_start) {
                auto call = first.exchange(first.post_request(call_body(o, 1), session),
                                           run.deadline);
                run.cold_start_ms = seconds_since(spawned_at) * 1000;
                Answer a = call ? inspect(rpc_payload(*call), parser) : Answer{1, false, "none"};
                run.stats.record(a, run.cold_start_ms, true);
                run.idle_rss_kib = process_status_kib(run.pid, "VmRSS");
                return;
            }
            if (o.tools_list) {
                auto r2 = first.exchange(first.post_request(kToolsList, session), run.deadline);
                run.tools_list_bytes = r2 ? long(rpc_payload(*r2).size()) : -1;
            }
        }
    }

    // One logical call: an MCP tools/call, or one gateway read (all its pages with --scan).
    auto one_call = [&](HttpConnection& conn, simdjson::ondemand::parser& p, long id) -> Answer {
        if (mcp) {
            auto r = conn.exchange(modern ? conn.post_request(modern_call_body(o, id), "", o.tool)
                                          : conn.post_request(call_body(o, id), session),
                                   run.deadline);
            if (!r) return {id, false, "no HTTP answer"};
            if (r->status != 200) return {id, false, "HTTP " + std::to_string(r->status)};
            Answer a = inspect(rpc_payload(*r), p);
            return a;
        }
        long offset = 0;
        for (int page = 0; page < 100000; ++page) {
            std::string path = fill(o.path, id);
            if (o.scan) path += "&offset=" + std::to_string(offset);
            auto r = conn.exchange(conn.get_request(path), run.deadline);
            if (!r) return {id, false, "no HTTP answer"};
            if (r->status != 200)
                return {id, false, "HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 200)};
            if (!o.scan || (o.scan_pages > 0 && page + 1 >= o.scan_pages)) return {id, true, ""};
            auto more = r->body.rfind("\"has_more\":");
            if (more == std::string::npos) return {id, false, "no pagination"};
            if (r->body.compare(more + 11, 4, "true") != 0) return {id, true, ""};
            auto lim = path.find("limit=");
            offset += lim == std::string::npos ? 100 : std::atol(path.c_str() + lim + 6);
        }
        return {id, false, "too many pages"};
    };

    auto phase = [&](long count, bool measured, long first_id) {
        std::atomic<long> next{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < o.concurrency; ++t) {
            threads.emplace_back([&] {
                HttpConnection conn(url);
                simdjson::ondemand::parser p;
                while (true) {
                    const long i = next.fetch_add(1);
                    if (i >= count) break;
                    if (Clock::now() >= run.deadline) {
                        run.stats.record({i, false, "stopped by --max-seconds"}, 0, false);
                        continue;
                    }
                    const auto t0 = Clock::now();
                    Answer a = one_call(conn, p, first_id + i);
                    const double ms =
                        std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
                    run.stats.record(a, ms, measured);
                    if (measured) run.maybe_sample_rss(++run.done);
                }
            });
        }
        for (auto& t : threads) t.join();
    };
    run.idle_rss_kib = process_status_kib(run.pid, "VmRSS");
    phase(o.warmup, false, 1);
    run.stats.ok = 0;
    const double cpu0 = process_cpu_seconds(run.pid);
    const double self0 = self_cpu_seconds();
    const auto t0 = Clock::now();
    phase(o.requests, true, 1 + o.warmup);
    run.wall_s = seconds_since(t0);
    run.server_cpu_s = process_cpu_seconds(run.pid) - cpu0;
    run.driver_cpu_s = self_cpu_seconds() - self0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);
    Run run;
    run.o = parse_options(argc, argv);
    const Options& o = run.o;
    if (o.transport == "stdio") {
        run_stdio(run);
    } else if (o.transport == "http" || o.transport == "modern" || o.transport == "gateway") {
        run_http(run);
    } else {
        die("unknown transport " + o.transport);
    }

    // Memory of the server at the end of the measured run (before a spawned one is stopped).
    long rss = process_status_kib(run.pid, "VmRSS");
    long hwm = process_status_kib(run.pid, "VmHWM");
    const auto& samples = run.stats.rss_samples;
    // A spawned server stops now that its figures are read: a stdio one at end of input (so
    // that a profiler around it writes its output), an HTTP one on SIGTERM.
    if (run.child.pid > 0) {
        if (run.child.in < 0) kill(run.child.pid, SIGTERM);
        finish(run.child, o.stop_grace);
    }

    auto& lat = run.stats.latency_ms;
    std::sort(lat.begin(), lat.end());
    const long measured = static_cast<long>(lat.size());
    const double per_call = measured > 0 ? 1.0 / double(measured) : 0;
    std::printf(
        "{\"transport\":\"%s\",\"tool\":\"%s\",\"concurrency\":%d,\"requests\":%ld,"
        "\"ok\":%ld,\"failed\":%ld,\"wall_s\":%.4f,\"calls_per_s\":%.1f,"
        "\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f,"
        "\"driver_cpu_s\":%.3f,\"driver_cpu_per_call_ms\":%.4f,"
        "\"server_cpu_s\":%.3f,\"server_cpu_per_call_ms\":%.4f,"
        "\"server_rss_kib\":%ld,\"server_hwm_kib\":%ld,\"idle_rss_kib\":%ld,"
        "\"tools_list_bytes\":%ld,\"cold_start_ms\":%.3f,\"rss_samples\":[",
        o.transport.c_str(), o.tool.c_str(), o.concurrency, o.requests, run.stats.ok,
        run.stats.failed, run.wall_s, run.wall_s > 0 ? double(measured) / run.wall_s : 0,
        percentile(lat, 50), percentile(lat, 90), percentile(lat, 99),
        lat.empty() ? 0 : lat.back(), run.driver_cpu_s, run.driver_cpu_s * 1000 * per_call,
        run.server_cpu_s, run.server_cpu_s * 1000 * per_call, rss, hwm, run.idle_rss_kib,
        run.tools_list_bytes, run.cold_start_ms);
    for (std::size_t i = 0; i < samples.size(); ++i)
        std::printf("%s[%ld,%ld]", i ? "," : "", samples[i].first, samples[i].second);
    std::printf("],\"first_failure\":\"%s\"}\n", json_escape(run.stats.first_failure).c_str());
    return run.stats.failed == 0 && run.stats.ok > 0 ? 0 : 1;
}
