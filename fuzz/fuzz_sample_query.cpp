// The sample gateway's request parsing: a read's query string (resource, client_id, limit,
// offset, order, direction, filter_field, filter_value) and an action's JSON body, through
// httplib's request handling into the gateway's handlers, with no socket (an in-memory stream).
// Input: one selector byte (GET, POST or another method), then the query string or the body.
// Checks that every answer is an HTTP answer whose body is JSON.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.hpp"
#include "gateway/sample/sample_gateway.hpp"

namespace {

// httplib's own request handling, reachable without a socket.
class InMemoryServer : public httplib::Server {
public:
    bool serve(agency::fuzz::MemoryStream& stream) {
        bool closed = false;
        return process_request(stream, true, closed, nullptr);
    }
};

struct Gateway {
    std::shared_ptr<agency::sample::Gateway> data = std::make_shared<agency::sample::Gateway>();
    InMemoryServer http;
    Gateway() { data->mount(http, "/api"); }
};

std::unique_ptr<Gateway> g_gateway;
std::uint64_t g_posts = 0;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    agency::fuzz::quiet_logs();
    g_gateway = std::make_unique<Gateway>();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string_view rest = agency::fuzz::as_text(data + 1, size - 1);
    std::string request;
    switch (data[0] % 4) {
        case 0:
        case 1:
            request = "GET /api?" + std::string(rest) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
            break;
        case 2:
            // Actions add rows: start from fresh sample data now and then, so memory stays flat.
            if (++g_posts % 20000 == 0) g_gateway = std::make_unique<Gateway>();
            request = "POST /api HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: " +
                      std::to_string(rest.size()) + "\r\n\r\n" + std::string(rest);
            break;
        case 3:
            request = std::string(rest) + " /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
            break;
    }
    agency::fuzz::MemoryStream stream(request);
    g_gateway->http.serve(stream);
    // An answer, when there is one, is HTTP with a JSON body.
    const std::string& out = stream.output;
    if (out.empty()) return 0;
    if (out.rfind("HTTP/1.1 ", 0) != 0) {
        std::fprintf(stderr, "not an HTTP answer: %.500s\n", out.c_str());
        std::abort();
    }
    const auto body_at = out.find("\r\n\r\n");
    if (body_at == std::string::npos) {
        std::fprintf(stderr, "an HTTP answer without its head's end: %.500s\n", out.c_str());
        std::abort();
    }
    const std::string_view body = std::string_view(out).substr(body_at + 4);
    if (!body.empty() && nlohmann::json::parse(body, nullptr, false).is_discarded()) {
        std::fprintf(stderr, "an answer whose body is not JSON: %.2000s\n", out.c_str());
        std::abort();
    }
    return 0;
}
