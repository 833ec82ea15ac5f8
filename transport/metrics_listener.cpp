#include "transport/metrics_listener.hpp"

#include <stdexcept>

#include "base/metrics.hpp"
#include "net/server_thread.hpp"
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
    net::ServerThread listener;
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
        impl_->listener.start(*http, {.host = host, .port = port, .who = "--metrics-listen"});
    impl_->http = std::move(http);
    return bound;
}

void MetricsListener::stop() {
    if (!impl_->http) return;
    impl_->listener.stop();
    impl_->http.reset();
}

std::string MetricsListener::url() const { return impl_->listener.url("/metrics"); }

}  // namespace agency::mcp
