// GET /metrics (base::metrics::render, the Prometheus text format) on a listener of its own
// (--metrics-listen), in stdio mode as in HTTP mode: an operator can keep the metrics on a
// private address while /mcp faces callers. Nothing else is served there. The answer holds
// counts, durations and bounded labels (methods, tool names, statuses), no caller's name or
// secret, so it asks no key: who may reach the address is the operator's choice.
#pragma once

#include <memory>
#include <string>

#include "transport/http_routes.hpp"

namespace agency::mcp {

// GET /metrics for the HTTP transport's routes (HttpOptions::routes).
HttpRoute metrics_route();

class MetricsListener {
public:
    MetricsListener();
    ~MetricsListener();
    MetricsListener(const MetricsListener&) = delete;
    MetricsListener& operator=(const MetricsListener&) = delete;

    // Binds and serves on a background thread; returns the bound port (port 0: an ephemeral
    // one). Throws std::runtime_error naming the address when it cannot bind.
    int start(const std::string& host, int port);
    void stop();
    std::string url() const;  // http://HOST:PORT/metrics

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace agency::mcp
