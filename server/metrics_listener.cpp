#include "server/metrics_listener.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "base/metrics.hpp"
#include "net/socket_stream.hpp"
#include "server/telemetry.hpp"

namespace agency::mcp {

HttpRoute metrics_route() {
    return {.method = "GET", .path = "/metrics", .handler = [](const HttpRequestView&) {
                return HttpReply{.status = 200,
                                 .content_type = base::metrics::kContentType,
                                 .body = base::metrics::render(),
                                 .headers = {}};
            }};
}

struct MetricsListener::Impl {
    std::unique_ptr<net::PlainServer> http;
    std::thread thread;
    std::string host;
    int port = 0;
};

MetricsListener::MetricsListener() : impl_(std::make_unique<Impl>()) {}

MetricsListener::~MetricsListener() { stop(); }

int MetricsListener::start(const std::string& host, int port) {
    if (impl_->http) throw std::logic_error("MetricsListener already started");
    auto http = std::make_unique<net::PlainServer>();
    net::ConnectionLimits limits;
    limits.threads = 2;  // a scraper or two
    limits.max_connections = 64;
    limits.max_connections_per_peer = 16;
    http->set_limits(limits);
    http->Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(base::metrics::render(), base::metrics::kContentType);
    });
    http->set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (res.status == 404) res.set_content("only GET /metrics is served here\n", "text/plain");
    });
    http->set_logger([count = HttpAnswerCounter({"/metrics"})](const httplib::Request& req,
                                                               const httplib::Response& res) {
        count(req.method, req.path, res.status);
    });
    const int bound =
        port == 0 ? http->bind_to_any_port(host) : (http->bind_to_port(host, port) ? port : -1);
    if (bound < 0)
        throw std::runtime_error("--metrics-listen: cannot listen on " + host + ":" +
                                 std::to_string(port) +
                                 " (in use, or not an address of this host)");
    httplib::Server* raw = http.get();
    impl_->thread = std::thread([raw] { raw->listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!raw->is_running() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    impl_->http = std::move(http);
    impl_->host = host;
    impl_->port = bound;
    return bound;
}

void MetricsListener::stop() {
    if (!impl_->http) return;
    impl_->http->stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    impl_->http.reset();
}

std::string MetricsListener::url() const {
    const std::string host =
        impl_->host.find(':') != std::string::npos ? "[" + impl_->host + "]" : impl_->host;
    return "http://" + host + ":" + std::to_string(impl_->port) + "/metrics";
}

}  // namespace agency::mcp
