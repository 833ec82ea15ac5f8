// A stdio session through the real transport and dispatch: the input is what a client writes
// to the server's stdin (one JSON-RPC message a line, any number of lines), served by
// serve_stdio with every tool registered over the in-process sample gateway. Checks that the
// server survives it and that every line it writes back is a JSON-RPC object.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.hpp"
#include "transport/stdio_transport.hpp"

namespace {

agency::fuzz::ToolServer* g_server = nullptr;

int memory_file(const char* name) {
    const int fd = ::memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) std::abort();
    return fd;
}

void write_all(int fd, const std::uint8_t* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n <= 0) std::abort();
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

std::string read_all(int fd) {
    std::string out;
    ::lseek(fd, 0, SEEK_SET);
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    agency::fuzz::quiet_logs();
    // An elicitation the input does not answer (most) waits this long: short, for throughput.
    g_server = agency::fuzz::start_tool_server(std::chrono::milliseconds(20));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int in = memory_file("stdin");
    const int out = memory_file("stdout");
    write_all(in, data, size);
    ::lseek(in, 0, SEEK_SET);

    agency::mcp::StdioOptions options;
    options.max_message_bytes = 64 * 1024;  // so that the oversized-line path is reachable
    options.workers = 2;
    options.drain_timeout = std::chrono::seconds(5);
    agency::mcp::serve_stdio(*g_server->server, options, in, out);

    const std::string written = read_all(out);
    ::close(in);
    ::close(out);
    // Every line written back is one JSON-RPC object.
    std::size_t from = 0;
    while (from < written.size()) {
        std::size_t end = written.find('\n', from);
        if (end == std::string::npos) end = written.size();
        const auto line = nlohmann::json::parse(written.begin() + static_cast<std::ptrdiff_t>(from),
                                                written.begin() + static_cast<std::ptrdiff_t>(end),
                                                nullptr, false);
        if (line.is_discarded() || !line.is_object() || line.value("jsonrpc", "") != "2.0") {
            std::fprintf(stderr, "stdio wrote a line that is not a JSON-RPC object: %.*s\n",
                         static_cast<int>(std::min<std::size_t>(end - from, 2000)),
                         written.data() + from);
            std::abort();
        }
        from = end + 1;
    }
    return 0;
}
