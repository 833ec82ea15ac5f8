// Row storage for the sample gateway: rows are kept as serialized JSON text plus the few field
// values reads order and filter by, so a page is built by concatenating stored text.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "base/clock.hpp"
#include "gateway/sample/sample_internal.hpp"

namespace agency::sample::detail {

std::optional<std::uint8_t> key_field_index(std::string_view name) {
    for (std::size_t i = 0; i < kKeyFields.size(); ++i) {
        if (kKeyFields[i] == name) return static_cast<std::uint8_t>(i);
    }
    return std::nullopt;
}

const KeyValue* Row::key(std::uint8_t field) const {
    for (const auto& k : keys) {
        if (k.field == field) return &k;
        if (k.field > field) break;
    }
    return nullptr;
}

Row make_row(const ojson& object) {
    Row row;
    row.json = object.dump();
    for (const auto& [name, value] : object.items()) {
        const auto field = key_field_index(name);
        if (!field || value.is_structured()) continue;
        KeyValue k;
        k.field = *field;
        if (value.is_string()) {
            k.kind = KeyKind::string;
            k.text = value.get<std::string>();
        } else if (value.is_boolean()) {
            k.kind = KeyKind::boolean;
            k.number = value.get<bool>() ? 1 : 0;
            k.text = value.get<bool>() ? "true" : "false";
        } else if (value.is_number()) {
            k.kind = KeyKind::number;
            k.number = value.get<double>();
            k.text = value.dump();
        } else {
            k.kind = KeyKind::null_value;
            k.text = "null";
        }
        row.keys.push_back(std::move(k));
    }
    std::sort(row.keys.begin(), row.keys.end(),
              [](const KeyValue& a, const KeyValue& b) { return a.field < b.field; });
    if (row.keys.empty() || row.keys.front().field != 0 ||
        row.keys.front().kind != KeyKind::string) {
        throw std::logic_error("sample row without a string id: " + row.json);
    }
    row.keys.shrink_to_fit();
    return row;
}

void Table::append(Row row) {
    rows_.push_back(std::move(row));
    std::lock_guard lock(index_mutex_);
    indexes_.clear();
}

void Table::replace(std::size_t index, Row row) {
    rows_.at(index) = std::move(row);
    std::lock_guard lock(index_mutex_);
    indexes_.clear();
}

std::optional<std::size_t> Table::find(std::string_view id) const {
    for (std::size_t i = 0; i < rows_.size(); ++i) {
        if (rows_[i].id() == id) return i;
    }
    return std::nullopt;
}

namespace {

// A row's sort value copied into one contiguous record: sorting 100k rows through pointers
// into the rows costs a cache miss per comparison.
struct SortEntry {
    std::array<char, 24> prefix{};  // string values, zero-padded
    double number = 0;
    std::uint32_t index = 0;
    std::uint32_t id_rank = 0;
    KeyKind kind = KeyKind::null_value;
    bool missing = true;
    bool long_text = false;  // the prefix does not hold the whole string
};

}  // namespace

std::shared_ptr<const Table::Index> Table::sorted(std::uint8_t field, bool descending) const {
    const int slot = field * 2 + (descending ? 1 : 0);
    std::lock_guard lock(index_mutex_);
    if (auto it = indexes_.find(slot); it != indexes_.end()) return it->second;

    // Sorting under the lock keeps concurrent first reads from building the same index twice.
    const std::size_t n = rows_.size();
    // Ties fall back to the id. Ids are usually issued in insertion order; then the position
    // is the id's rank and no string comparison is needed. One pass reads each row once.
    std::vector<SortEntry> entries(n);
    bool ids_in_order = true;
    for (std::size_t i = 0; i < n; ++i) {
        SortEntry& e = entries[i];
        e.index = static_cast<std::uint32_t>(i);
        e.id_rank = e.index;
        const Row& row = rows_[i];
        if (i > 0 && ids_in_order) ids_in_order = rows_[i - 1].id() < row.id();
        const KeyValue* k = row.key(field);
        if (!k || k->kind == KeyKind::null_value) continue;
        e.missing = false;
        e.kind = k->kind;
        e.number = k->number;
        if (k->kind == KeyKind::string) {
            const std::size_t len = std::min(k->text.size(), e.prefix.size());
            std::copy_n(k->text.data(), len, e.prefix.data());
            e.long_text = k->text.size() >= e.prefix.size();
        }
    }
    if (!ids_in_order) {
        std::vector<std::uint32_t> by_id(n);
        for (std::size_t i = 0; i < n; ++i) by_id[i] = static_cast<std::uint32_t>(i);
        std::sort(by_id.begin(), by_id.end(),
                  [&](std::uint32_t a, std::uint32_t b) { return rows_[a].id() < rows_[b].id(); });
        for (std::size_t r = 0; r < n; ++r)
            entries[by_id[r]].id_rank = static_cast<std::uint32_t>(r);
    }
    const auto before = [&](const SortEntry& a, const SortEntry& b) {
        // Rows lacking the field go last in either direction; ties fall back to the id so
        // paging is stable.
        if (a.missing != b.missing) return b.missing;
        int c = 0;
        if (!a.missing) {
            if (a.kind != b.kind) {
                c = a.kind < b.kind ? -1 : 1;
            } else if (a.kind == KeyKind::string) {
                c = std::memcmp(a.prefix.data(), b.prefix.data(), a.prefix.size());
                if (c == 0 && (a.long_text || b.long_text)) {
                    c = rows_[a.index].key(field)->text.compare(rows_[b.index].key(field)->text);
                }
            } else if (a.number != b.number) {
                c = a.number < b.number ? -1 : 1;
            }
        }
        if (c == 0) c = a.id_rank < b.id_rank ? -1 : (a.id_rank > b.id_rank ? 1 : 0);
        return descending ? c > 0 : c < 0;
    };
    // Rows are mostly stored in date order, so the order asked for is often the stored order
    // or its reverse: check those in linear time before sorting.
    if (!std::is_sorted(entries.begin(), entries.end(), before)) {
        std::reverse(entries.begin(), entries.end());
        if (!std::is_sorted(entries.begin(), entries.end(), before)) {
            std::sort(entries.begin(), entries.end(), before);
        }
    }
    auto index = std::make_shared<Index>(n);
    for (std::size_t i = 0; i < n; ++i) (*index)[i] = entries[i].index;
    indexes_.emplace(slot, index);
    return index;
}

void Table::write_page(std::string& out, const ReadParams& params,
                       const std::vector<std::string>* visible_ids) const {
    std::shared_ptr<const Index> index;
    if (params.order) index = sorted(*params.order, params.descending);
    const std::size_t n = rows_.size();
    auto row_at = [&](std::size_t i) -> const Row& {
        if (index) return rows_[(*index)[i]];
        return rows_[params.descending ? n - 1 - i : i];
    };
    const auto offset = static_cast<std::uint64_t>(params.offset);
    const auto limit = static_cast<std::uint64_t>(params.limit);
    const std::uint64_t end = offset > std::numeric_limits<std::uint64_t>::max() - limit
                                  ? std::numeric_limits<std::uint64_t>::max()
                                  : offset + limit;

    out += "\"data\":[";
    bool first = true;
    auto emit = [&](const Row& row) {
        if (!first) out += ',';
        first = false;
        out += row.json;
    };
    std::uint64_t total = 0;
    if (!visible_ids && !params.filter_field) {
        // Unfiltered: jump straight to the page.
        total = n;
        for (std::uint64_t i = offset; i < std::min<std::uint64_t>(end, n); ++i) {
            emit(row_at(static_cast<std::size_t>(i)));
        }
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            const Row& row = row_at(i);
            if (visible_ids && std::find(visible_ids->begin(), visible_ids->end(), row.id()) ==
                                   visible_ids->end()) {
                continue;
            }
            if (params.filter_field) {
                const KeyValue* k = row.key(*params.filter_field);
                if (!k || k->text != params.filter_value) continue;
            }
            if (total >= offset && total < end) emit(row);
            ++total;
        }
    }
    out += "],\"pagination\":{\"total\":";
    out += std::to_string(total);
    out += ",\"limit\":";
    out += std::to_string(params.limit);
    out += ",\"offset\":";
    out += std::to_string(params.offset);
    out += ",\"has_more\":";
    out += end < total ? "true" : "false";
    out += '}';
}

// ---- time ----

std::string iso_time(Seconds t) { return base::format_utc_time(t); }

std::string iso_date(Days d) {
    const std::chrono::year_month_day ymd{d};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
    return buf;
}

Seconds Store::now_seconds() const {
    return std::chrono::floor<std::chrono::seconds>(base::Clock::or_system(options.clock).wall());
}

// ---- randomness ----

std::uint64_t hash_text(std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

std::uint64_t mix_seed(std::uint64_t seed, std::string_view a, std::string_view b) {
    // splitmix64 finalizer over the combined inputs.
    std::uint64_t z = seed ^ hash_text(a) ^ (hash_text(b) * 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// ---- store ----

namespace {

std::string table_key(const std::string& resource, const std::string& client_id) {
    return resource + '\x1f' + client_id;
}

}  // namespace

Table& Store::table(const std::string& resource, const std::string& client_id) {
    auto& slot = tables[table_key(resource, client_id)];
    if (!slot) slot = std::make_unique<Table>();
    return *slot;
}

const Table* Store::find_table(const std::string& resource, const std::string& client_id) const {
    auto it = tables.find(table_key(resource, client_id));
    return it == tables.end() ? nullptr : it->second.get();
}

bool Store::has_resource(std::string_view resource) const {
    return std::find(resources.begin(), resources.end(), resource) != resources.end();
}

std::string Store::next_id(const std::string& resource, const std::string& client_id) {
    const auto& profile = clients.at(client_id);
    const std::size_t seq = table(resource, client_id).size() + 1;
    char digits[32];
    std::snprintf(digits, sizeof digits, "%06zu", seq);
    return id_prefix(resource, *this) + "-" + profile.short_name + "-" + digits;
}

std::vector<std::string> resource_names(const std::string& call_vendor) {
    return {"clients",
            "keywords",
            "seo_tasks",
            "seo_reports",
            "blogs",
            "blog_categories",
            "blog_authors",
            "geo_articles",
            "topical_maps",
            "press_releases",
            "backlinks",
            "anchor_texts",
            "top_linked_pages",
            "domain_metrics",
            "backlink_outreach",
            "backlink_summaries",
            "citations",
            "gbp_profiles",
            "gbp_posts",
            "reviews",
            "locations",
            "grid_searches",
            "competitors",
            "llm_reports",
            "ai_summaries",
            "ai_training",
            "call_tracking_calls",
            call_vendor + "_calls",
            "call_scores",
            "call_transcriptions",
            "integrations"};
}

std::string id_prefix(const std::string& resource, const Store& store) {
    static constexpr std::pair<std::string_view, std::string_view> kPrefixes[]{
        {"keywords", "kw"},
        {"seo_tasks", "task"},
        {"seo_reports", "audit"},
        {"blogs", "post"},
        {"blog_categories", "bcat"},
        {"blog_authors", "author"},
        {"geo_articles", "geo"},
        {"topical_maps", "tmap"},
        {"press_releases", "pr"},
        {"backlinks", "bl"},
        {"anchor_texts", "anchor"},
        {"top_linked_pages", "page"},
        {"domain_metrics", "dm"},
        {"backlink_outreach", "outreach"},
        {"backlink_summaries", "blsum"},
        {"citations", "cit"},
        {"gbp_profiles", "gbp"},
        {"gbp_posts", "gbppost"},
        {"reviews", "rev"},
        {"locations", "loc"},
        {"grid_searches", "grid"},
        {"competitors", "comp"},
        {"llm_reports", "llm"},
        {"ai_summaries", "aisum"},
        {"ai_training", "kb"},
        {"call_tracking_calls", "call"},
        {"call_scores", "score"},
        {"call_transcriptions", "tx"},
        {"integrations", "int"}};
    for (const auto& [name, prefix] : kPrefixes)
        if (name == resource) return std::string(prefix);
    if (resource == store.vendor_resource) {
        return resource.substr(0, resource.size() - std::string_view("_calls").size());
    }
    return resource;
}

std::string json_quote(std::string_view text) {
    // Error texts can echo raw query bytes; invalid UTF-8 must not throw.
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace agency::sample::detail
