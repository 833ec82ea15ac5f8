// The process's metrics, in one registry every layer records into (prometheus-cpp's core
// underneath; no prometheus type crosses this header). A family is made once (a function-local
// static, never destroyed: threads may record until exit); recording looks its series up by
// label values in a small cache, so a hot path pays a short lock and a hash, no allocation once
// the series exists. Label values must come from a bounded set (tool names the server knows,
// HTTP methods, outcomes): never a caller's free text.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agency::base::metrics {

using Labels = std::initializer_list<std::string_view>;  // values, in the family's label order

class CounterFamily {
public:
    // `shown_at_zero`: for a family of one label, the values whose series show (at 0) from the
    // start, before anything is counted (a family of more labels touches its own).
    CounterFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::initializer_list<std::string_view> shown_at_zero = {});
    ~CounterFamily();
    void add(Labels values, double amount = 1);
    // Makes the series (at 0) so that it shows before anything is counted.
    void touch(Labels values) { add(values, 0); }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class GaugeFamily {
public:
    // `shown_at_zero`: as for CounterFamily.
    GaugeFamily(std::string name, std::string help, std::vector<std::string> label_names,
                std::initializer_list<std::string_view> shown_at_zero = {});
    ~GaugeFamily();
    void add(Labels values, double delta);
    void set(Labels values, double value);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class HistogramFamily {
public:
    HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                    std::vector<double> bounds);
    ~HistogramFamily();
    void observe(Labels values, double value);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Seconds: the OpenTelemetry MCP conventions' boundaries, with a few below 10 ms (a read
// from a nearby gateway is answered in about a millisecond).
const std::vector<double>& duration_buckets();

// An HTTP status someone else chose, as a label value: a status HTTP defines (the IANA
// registry: 100-103, 200-208, 226, 300-308, 400-418, 421-426, 428, 429, 431, 451, 500-508, 510,
// 511) as its number, 0 (no answer) as "0", anything else as "other". A peer answering random
// statuses cannot grow the label set (issue 30: 879 labels, 2 MB of /metrics).
std::string http_status_label(int status);

// Runs before each render: what is read rather than counted (sessions open now) is set there.
// Returns an id for remove_render_hook, which whoever owns what the hook reads calls before
// letting it go.
int add_render_hook(std::function<void()> hook);
void remove_render_hook(int id);

// Every family in the Prometheus text exposition format (version 0.0.4), then the standard
// process metrics (process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_start_time_seconds, process_open_fds, process_max_fds)
// read from /proc/self at the call, as Prometheus's client libraries export them.
std::string render();
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace agency::base::metrics
