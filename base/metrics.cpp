#include "base/metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace agency::base::metrics {

namespace {

// Never destroyed: a worker may still record while the process exits.
prometheus::Registry& registry() {
    static auto* the = new prometheus::Registry();
    return *the;
}

struct Hooks {
    std::mutex mutex;
    std::map<int, std::function<void()>> hooks;
    int next = 1;
};

Hooks& hooks() {
    static auto* the = new Hooks();
    return *the;
}

// The series of one family by label values: prometheus-cpp's own lookup builds a map of
// strings per call; this one hashes the values joined once.
template <typename Metric>
class SeriesCache {
public:
    SeriesCache(prometheus::Family<Metric>& family, std::vector<std::string> names)
        : family_(family), names_(std::move(names)) {}

    template <typename... Args>
    Metric& get(Labels values, Args&&... args) {
        std::string key;
        for (const auto value : values) {
            key += value;
            key += '\x1f';
        }
        std::lock_guard lock(mutex_);
        auto it = series_.find(key);
        if (it != series_.end()) return *it->second;
        prometheus::Labels labels;
        std::size_t i = 0;
        for (const auto value : values) {
            if (i == names_.size()) break;
            labels.emplace(names_[i++], std::string(value));
        }
        Metric& made = family_.Add(labels, std::forward<Args>(args)...);
        series_.emplace(std::move(key), &made);
        return made;
    }

private:
    prometheus::Family<Metric>& family_;
    std::vector<std::string> names_;
    std::mutex mutex_;
    std::unordered_map<std::string, Metric*> series_;
};

// What /proc/self/stat says of this process (proc(5)), in seconds and bytes.
struct SelfStat {
    double cpu_seconds = 0;     // utime + stime
    double started_ticks = 0;   // starttime: clock ticks after boot
    double virtual_bytes = 0;   // vsize
    double resident_bytes = 0;  // rss (pages) times the page size
};

std::string slurp(const char* path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::optional<SelfStat> read_self_stat() {
    const std::string text = slurp("/proc/self/stat");
    // The command name (field 2) is in parentheses and may hold spaces or ')': the fields
    // that follow start after the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream rest(text.substr(close + 1));
    std::vector<std::string> fields;  // fields[0] is field 3 (state)
    for (std::string field; fields.size() < 22 && rest >> field;) fields.push_back(field);
    if (fields.size() < 22) return std::nullopt;
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    if (ticks <= 0 || page <= 0) return std::nullopt;
    const auto field = [&](int n) {
        return std::strtod(fields[static_cast<std::size_t>(n - 3)].c_str(), nullptr);
    };
    return SelfStat{.cpu_seconds = (field(14) + field(15)) / ticks,
                    .started_ticks = field(22) / ticks,
                    .virtual_bytes = field(23),
                    .resident_bytes = field(24) * page};
}

// When the machine booted, in seconds since the epoch (/proc/stat's btime); 0 if unknown.
double boot_time() {
    static const double at = [] {
        const std::string text = slurp("/proc/stat");
        const auto line = text.find("\nbtime ");
        return line == std::string::npos ? 0.0 : std::strtod(text.c_str() + line + 7, nullptr);
    }();
    return at;
}

// Open file descriptors: the entries of /proc/self/fd (the one reading it included, as the
// client libraries count them); -1 if it cannot be read.
double open_fds() {
    std::error_code ec;
    std::filesystem::directory_iterator it("/proc/self/fd", ec);
    if (ec) return -1;
    double n = 0;
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
        if (ec) return -1;
        ++n;
    }
    return n;
}

// The process metrics Prometheus's client libraries export (client_golang's process
// collector; prometheus-cpp has none), read from /proc/self at each render, so they are true
// at the scrape. One that cannot be read is left out rather than shown as 0.
std::vector<prometheus::MetricFamily> process_families() {
    std::vector<prometheus::MetricFamily> out;
    const auto add = [&out](const char* name, const char* help, prometheus::MetricType type,
                            double value) {
        prometheus::ClientMetric metric;
        if (type == prometheus::MetricType::Counter)
            metric.counter.value = value;
        else
            metric.gauge.value = value;
        out.push_back({name, help, type, {std::move(metric)}});
    };
    using prometheus::MetricType;
    if (const auto stat = read_self_stat()) {
        add("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
            MetricType::Counter, stat->cpu_seconds);
        add("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
            stat->resident_bytes);
        add("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
            stat->virtual_bytes);
        if (const double boot = boot_time(); boot > 0)
            add("process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                boot + stat->started_ticks);
    }
    if (const double fds = open_fds(); fds >= 0)
        add("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, fds);
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0)
        add("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
            static_cast<double>(files.rlim_cur));
    return out;
}

}  // namespace

struct CounterFamily::Impl {
    SeriesCache<prometheus::Counter> cache;
};

namespace {

// The values a family of one label shows at 0 from the start (CounterFamily's constructor).
template <typename Family>
void show_at_zero(Family& family, const std::vector<std::string>& label_names,
                  std::initializer_list<std::string_view> values) {
    if (values.size() == 0) return;
    if (label_names.size() != 1)
        throw std::logic_error("metrics: shown_at_zero is for a family of one label");
    for (const std::string_view value : values) family.add({value}, 0);
}

}  // namespace

CounterFamily::CounterFamily(std::string name, std::string help,
                             std::vector<std::string> label_names,
                             std::initializer_list<std::string_view> shown_at_zero)
    : impl_(new Impl{
          {prometheus::BuildCounter().Name(name).Help(help).Register(registry()), label_names}}) {
    show_at_zero(*this, label_names, shown_at_zero);
}

CounterFamily::~CounterFamily() = default;

void CounterFamily::add(Labels values, double amount) {
    impl_->cache.get(values).Increment(amount);
}

struct GaugeFamily::Impl {
    SeriesCache<prometheus::Gauge> cache;
};

GaugeFamily::GaugeFamily(std::string name, std::string help, std::vector<std::string> label_names,
                         std::initializer_list<std::string_view> shown_at_zero)
    : impl_(new Impl{
          {prometheus::BuildGauge().Name(name).Help(help).Register(registry()), label_names}}) {
    show_at_zero(*this, label_names, shown_at_zero);
}

GaugeFamily::~GaugeFamily() = default;

void GaugeFamily::add(Labels values, double delta) { impl_->cache.get(values).Increment(delta); }

void GaugeFamily::set(Labels values, double value) { impl_->cache.get(values).Set(value); }

struct HistogramFamily::Impl {
    SeriesCache<prometheus::Histogram> cache;
    prometheus::Histogram::BucketBoundaries bounds;
};

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds)
    : impl_(new Impl{{prometheus::BuildHistogram().Name(name).Help(help).Register(registry()),
                      std::move(label_names)},
                     std::move(bounds)}) {}

HistogramFamily::~HistogramFamily() = default;

void HistogramFamily::observe(Labels values, double value) {
    impl_->cache.get(values, impl_->bounds).Observe(value);
}

const std::vector<double>& duration_buckets() {
    static const std::vector<double> bounds{0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
                                            1,     2,      5,     10,   30,   60,   120, 300};
    return bounds;
}

std::string http_status_label(int status) {
    const bool known = status == 0 || (status >= 100 && status <= 103) ||
                       (status >= 200 && status <= 208) || status == 226 ||
                       (status >= 300 && status <= 308 && status != 306) ||
                       (status >= 400 && status <= 418) || (status >= 421 && status <= 426) ||
                       status == 428 || status == 429 || status == 431 || status == 451 ||
                       (status >= 500 && status <= 508) || status == 510 || status == 511;
    return known ? std::to_string(status) : "other";
}

int add_render_hook(std::function<void()> hook) {
    auto& h = hooks();
    std::lock_guard lock(h.mutex);
    const int id = h.next++;
    h.hooks.emplace(id, std::move(hook));
    return id;
}

void remove_render_hook(int id) {
    auto& h = hooks();
    std::lock_guard lock(h.mutex);
    h.hooks.erase(id);
}

std::string render() {
    {
        auto& h = hooks();
        std::lock_guard lock(h.mutex);
        for (auto& [id, hook] : h.hooks) hook();
    }
    auto families = registry().Collect();
    for (auto& family : process_families()) families.push_back(std::move(family));
    return prometheus::TextSerializer().Serialize(families);
}

}  // namespace agency::base::metrics
