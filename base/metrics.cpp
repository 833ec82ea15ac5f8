#include "base/metrics.hpp"

#include <map>
#include <mutex>
#include <unordered_map>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
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

}  // namespace

struct CounterFamily::Impl {
    SeriesCache<prometheus::Counter> cache;
};

CounterFamily::CounterFamily(std::string name, std::string help,
                             std::vector<std::string> label_names)
    : impl_(new Impl{{prometheus::BuildCounter().Name(name).Help(help).Register(registry()),
                      std::move(label_names)}}) {}

CounterFamily::~CounterFamily() = default;

void CounterFamily::add(Labels values, double amount) {
    impl_->cache.get(values).Increment(amount);
}

struct GaugeFamily::Impl {
    SeriesCache<prometheus::Gauge> cache;
};

GaugeFamily::GaugeFamily(std::string name, std::string help, std::vector<std::string> label_names)
    : impl_(new Impl{{prometheus::BuildGauge().Name(name).Help(help).Register(registry()),
                      std::move(label_names)}}) {}

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
    return prometheus::TextSerializer().Serialize(registry().Collect());
}

}  // namespace agency::base::metrics
