// Internals of the sample gateway shared by its .cpp files: the row store with its lazy sort
// indexes, the sample-data generator, the action handlers, and small time/random helpers.
#pragma once

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/sample/sample_gateway.hpp"

namespace agency::sample::detail {

// Ordered so rows read in a natural field order (id first) rather than alphabetically.
using ojson = nlohmann::ordered_json;

// The read whitelists of the spec (Read, rules 1 and 4).
inline constexpr std::array<std::string_view, 9> kOrderFields{
    "created_at",     "updated_at",      "id",          "fetched_at", "tracked_at",
    "external_pages", "linking_domains", "appearances", "scored_at"};
inline constexpr std::array<std::string_view, 9> kFilterFields{
    "id",        "status",     "source_type",   "source_id", "category_id",
    "published", "lead_grade", "quality_grade", "sentiment"};

// Every field a read can order or filter by; rows keep these values pre-extracted so a read
// never parses stored JSON. "id" is index 0 and every row has it.
inline constexpr std::array<std::string_view, 17> kKeyFields{
    "id",          "created_at",     "updated_at",      "fetched_at",
    "tracked_at",  "external_pages", "linking_domains", "appearances",
    "scored_at",   "status",         "source_type",     "source_id",
    "category_id", "published",      "lead_grade",      "quality_grade",
    "sentiment"};
std::optional<std::uint8_t> key_field_index(std::string_view name);

enum class KeyKind : std::uint8_t { null_value, boolean, number, string };

struct KeyValue {
    std::uint8_t field = 0;
    KeyKind kind = KeyKind::null_value;
    double number = 0;  // numbers and booleans (0/1)
    std::string text;   // the JSON scalar as a filter compares it: "true", "12", "active"
};

// One stored row: its serialized JSON (what reads send) and its indexed field values.
struct Row {
    std::string json;
    std::vector<KeyValue> keys;  // ascending by field; keys[0] is the id
    const KeyValue* key(std::uint8_t field) const;
    const std::string& id() const { return keys.front().text; }
};

// Serializes a row object; it must carry a string "id".
Row make_row(const ojson& object);

struct ReadParams {
    int limit = 100;
    std::int64_t offset = 0;
    std::optional<std::uint8_t> order;  // none: insertion order (oldest first when ascending)
    bool descending = true;
    std::optional<std::uint8_t> filter_field;
    std::string filter_value;
};

// The rows of one resource for one client, in insertion order. Not locked itself: the
// gateway's shared_mutex guards rows; the index cache has its own mutex for concurrent reads.
class Table {
public:
    const std::vector<Row>& rows() const { return rows_; }
    std::size_t size() const { return rows_.size(); }
    void append(Row row);
    void replace(std::size_t index, Row row);
    std::optional<std::size_t> find(std::string_view id) const;
    ojson parsed(std::size_t index) const { return ojson::parse(rows_[index].json); }

    // Appends `"data":[...],"pagination":{...}` for one page. `visible`, when given, hides
    // rows (keyed mode's clients list) before counting.
    void write_page(std::string& out, const ReadParams& params,
                    const std::vector<std::string>* visible_ids) const;

private:
    using Index = std::vector<std::uint32_t>;
    std::shared_ptr<const Index> sorted(std::uint8_t field, bool descending) const;

    std::vector<Row> rows_;
    mutable std::mutex index_mutex_;
    mutable std::map<int, std::shared_ptr<const Index>> indexes_;  // key: field * 2 + desc
};

// ---- time ----

using Seconds = std::chrono::sys_seconds;
using Days = std::chrono::sys_days;

// Sample data ends here (fixed, so data is identical on every run); action rows use the real
// clock and therefore always sort after it.
inline constexpr Days kDataEnd{std::chrono::year{2026} / 11 / 14};
// Options::stale_reports: the day the reports of new audits are dated (500 days before
// kDataEnd).
inline constexpr Days kStaleReportDay{kDataEnd - std::chrono::days{500}};

std::string iso_time(Seconds t);  // 2026-11-20T14:03:00Z
std::string iso_date(Days d);     // 2026-11-20

// ---- randomness ----

// std::mt19937_64's sequence is fixed by the standard; values are derived with plain
// arithmetic (the std distributions differ between standard libraries).
class Rng {
public:
    explicit Rng(std::uint64_t seed) : engine_(seed) {}
    std::uint64_t next() { return engine_(); }
    int between(int lo, int hi) {
        return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
    }
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    bool chance(double p) { return unit() < p; }
    template <class C>
    const auto& pick(const C& items) {
        return items[static_cast<std::size_t>(next() % items.size())];
    }

private:
    std::mt19937_64 engine_;
};

// Rounds to `places` decimals; dividing by an exact power of ten keeps the printed form short
// (4.1, not 4.1000000000000005).
inline double round_places(double value, int places) {
    double scale = 1;
    for (int i = 0; i < places; ++i) scale *= 10;
    return std::round(value * scale) / scale;
}

std::uint64_t hash_text(std::string_view text);  // FNV-1a, stable across platforms
std::uint64_t mix_seed(std::uint64_t seed, std::string_view a, std::string_view b);

// ---- clients and the store ----

struct ClientProfile {
    std::string id;
    std::string short_name;  // id part of row ids: "plumbing"
    std::string name;
    std::string industry;
    std::string host;  // website host
    std::string city;
    std::string state;
    std::string zip;
    double lat = 0;
    double lng = 0;
    std::string phone;
    std::string deployment_target;
    std::string gbp_category;
    std::string area_code;
    int location_count = 1;
    std::vector<std::string> services;
    std::vector<std::string> competitor_nouns;
    std::vector<std::string> nearby_cities;
    bool auto_deploy = false;
    // Keyword tracking other than the sample's own (Options::agency_clients): this many
    // keywords, every `tracking_every` days on `tracking_dates` dates (0: the sample's rule).
    int keyword_count = 0;
    int tracking_every = 0;
    int tracking_dates = 0;
    std::string website() const { return "https://" + host; }
};

struct Store {
    std::string vendor_resource;  // "<vendor>_calls"
    std::vector<std::string> resources;
    std::map<std::string, ClientProfile> clients;  // by id
    Table client_rows;                             // the `clients` resource
    std::unordered_map<std::string, std::unique_ptr<Table>> tables;
    std::map<std::string, std::size_t> counters;  // ids of things without a table (images)
    // What the gateway was made with (sample_gateway.hpp): the modes the actions follow
    // (bare_records, stale_reports, ...). Gateway::set_bare_records and set_empty_recipients
    // change them later.
    Options options;

    // "Now" for what an action records (options.clock; the process's when none is given).
    Seconds now_seconds() const;
    Table& table(const std::string& resource, const std::string& client_id);
    const Table* find_table(const std::string& resource, const std::string& client_id) const;
    bool has_resource(std::string_view resource) const;
    // Row id for a new row: "<prefix>-<client short name>-<6-digit sequence>".
    std::string next_id(const std::string& resource, const std::string& client_id);
};

// Resource names in spec order, with `<vendor>_calls` made concrete.
std::vector<std::string> resource_names(const std::string& call_vendor);
std::string id_prefix(const std::string& resource, const Store& store);

// Fills `store` with deterministic sample data for every client and resource (its
// `vendor_resource` and `resources` set first).
void generate_sample_data(Store& store, const Options& options);
// demo-law's rows that hide instructions from a person (sample_planted.cpp).
void plant_hidden_instructions(Store& store);
// Options::planted_lines: demo-law's client record made to forge lines (sample_planted.cpp).
void plant_forged_lines(Store& store);
// Options::phishing_article: demo-law's second blog post becomes a phishing page.
void plant_phishing_article(Store& store);

// Appends `row` (without id) to a client's table under `id`, id first; returns the id.
std::string append_with_id(Store& store, const std::string& resource, const std::string& client_id,
                           const std::string& id, const ojson& row);

// ---- content builders shared by the sample data and the actions ----

std::string slugify(std::string_view text);
std::string title_case(std::string_view text);
std::string lower(std::string_view text);
std::string url_host(std::string_view url);  // "https://www.x.com/a" -> "x.com"
std::string share_url(std::string_view kind, std::string_view id);
int search_volume(Rng& rng);
std::string blog_title(const std::string& keyword, Rng& rng);
// An article's body (HTML) as a generator writes it: a few paragraphs on the keyword.
std::string blog_body(const ClientProfile& client, const std::string& keyword,
                      const std::string& title);
// url, score, issues_found, issue_counts, pages_crawled, status,
// issues[{severity,page,recommendation}]
ojson audit_fields(const ClientProfile& client, const std::string& url, Rng& rng);
// Dates an audit report made by seo_audit: created_at and updated_at `now`; or, `stale`
// (Options::stale_reports), those and crawled_at on kStaleReportDay.
void stamp_report(ojson& row, const std::string& now, bool stale);
ojson topical_map_fields(const std::string& topic, int depth, Rng& rng);
ojson grid_fields(const std::string& keyword, double lat, double lng, double radius, Rng& rng);
ojson llm_fields(const std::string& brand, const std::string& prompt,
                 const std::vector<std::string>& competitors, Rng& rng);
ojson outreach_fields(const ClientProfile& client, const std::string& prospect_url,
                      const std::string& tone, Rng& rng);  // subject, html
ojson gbp_post_fields(const ClientProfile& client, const std::string& topic, const std::string& cta,
                      Rng& rng);                    // summary, cta, post_type
int transcript_score(std::string_view transcript);  // 0..100 lead score
std::string lead_grade(int score);                  // "A".."D"

// ---- actions ----

// An action's outcome before faults: HTTP status and either the response `data` (status 200)
// or the error text.
struct ActionOutcome {
    int http_status = 200;
    ojson data;
    std::string error;
};

namespace actions {
struct Ctx;  // what a handler is given (sample_action_kit.hpp)
}

// One row per action the sample implements: what discovery lists and the handler that runs it
// (gateway/sample/sample_actions.cpp). A new action is one row and its handler.
struct ActionInfo {
    std::string_view name;
    std::string_view description;
    std::vector<std::string_view> required;
    ActionOutcome (*run)(const actions::Ctx&) = nullptr;
};
const std::vector<ActionInfo>& action_catalog();
const ActionInfo* find_action(std::string_view name);

// Runs a validated action (required fields present, client known) under the write lock.
ActionOutcome run_action(Store& store, const ActionInfo& action, const ClientProfile& client,
                         const nlohmann::json& body);

// Quotes and escapes a string as JSON.
std::string json_quote(std::string_view text);

}  // namespace agency::sample::detail

// ---- the sample gateway's request handling: sample_routes.cpp (routing, auth, serving),
// sample_faults.cpp (fault injection, request log, /_control), sample_reads.cpp (reads, actions)

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace agency::sample {

// What one request on the base path produced, before it is written to the socket.
struct Reply {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    bool drop = false;
    bool cut_before_body = false;  // reset: not one byte of the body
    // A hostile answer (sample_hostile.cpp): when set, it writes the answer instead of `body`.
    std::function<void(const httplib::Request&, httplib::Response&)> respond;
    std::string target;
    std::string client_id;
    std::string fault;
};

Reply error_reply(int status, std::string_view message);

// Strict non-negative integer: digits only, no sign, no spaces, at most 18 digits.
std::optional<std::int64_t> parse_count(const std::string& text);

// The query string of a request target ("" when it has none).
std::string query_of(const httplib::Request& req);

// Turns `reply` into the hostile answer `fault` asks for (huge, endless, dripping, redirect,
// random_status); dripping keeps the reply's own status and body (sample_hostile.cpp).
void make_hostile(const Fault& fault, Reply& reply);
// The hostile modes' names, as the --fault help and the control path's errors list them.
inline constexpr const char* kHostileModeNames =
    "huge, endless, dripping, redirect, random_status, deep, wide, many_resources, "
    "ignores_offset";

const char* mode_name(FaultMode mode);
std::optional<FaultMode> mode_from_name(std::string_view name);
bool is_loopback(const std::string& addr);

struct Gateway::Impl {
    using json = nlohmann::json;

    explicit Impl(Options opts);

    mutable std::shared_mutex data_mutex;  // guards store
    detail::Store store;
    // The rows are made by the first request that needs them (most of a cold start's CPU was
    // making them, and a server's `initialize` needs none): whatever touches `store`'s rows
    // calls ensure_rows() first. The resource names and discovery are ready at construction.
    std::once_flag rows_made;
    void ensure_rows() {
        std::call_once(rows_made, [this] { detail::generate_sample_data(store, store.options); });
    }
    std::string resource_list;
    mutable std::mutex discovery_mutex;  // guards the three below (actions can be withdrawn)
    std::string discovery_body;
    std::string action_list;
    std::set<std::string> withdrawn;  // actions this deployment no longer offers

    mutable std::mutex auth_mutex;
    bool keyed = false;
    std::map<std::string, ApiKey> keys;
    std::map<std::string, std::set<std::string>> client_agencies;

    std::mutex fault_mutex;
    std::deque<Fault> faults;
    std::mt19937_64 fault_rng{0x5eed};  // percent faults; guarded by fault_mutex

    // Stats (guarded by log_mutex, like the log).
    Stats stats;
    // Requests received whose answer is not recorded yet (a slow action sleeping, say).
    std::size_t in_flight = 0;
    std::size_t posts_in_flight = 0;
    std::unordered_map<std::uint64_t, std::uint32_t> executed_bodies;
    static constexpr std::size_t kMaxExamples = 5;

    // The work of an action ran: counted, and a repeat of one body noted (retry-safe actions
    // excepted, spec rule 2).
    void note_execution(const std::string& action, const json& body);

    mutable std::mutex log_mutex;
    std::deque<LoggedRequest> log;

    void build_discovery();

    // ---- auth ----

    struct Caller {
        bool keyed = false;
        std::string agency;
        std::vector<std::string> scopes;  // the key's
    };

    // Explorer mode ignores the header; keyed mode needs a live key with `scope`.
    std::optional<Reply> authenticate(const httplib::Request& req, const std::string& scope,
                                      Caller& caller) const;

    bool linked(const std::string& client_id, const std::string& agency) const;

    // 403 when the key's agency cannot reach the client, 404 when the client does not exist.
    std::optional<Reply> check_client(const std::string& client_id, const Caller& caller) const;

    // ---- faults ----

    // The next fault for `target`; `only`: of that mode alone. Without `only`, ignores_offset
    // faults are passed over (read() applies them itself, before the page is made).
    std::optional<Fault> take_fault(const std::string& target,
                                    std::optional<FaultMode> only = std::nullopt);
    // deep, wide and many_resources: the answer `normal` (what the request gets without the
    // fault) turned hostile (sample_faults.cpp).
    static Reply hostile_reply(const std::string& target, const Fault& fault, Reply normal);

    // Runs `work` under whatever fault the next matching request is due.
    template <class Work, class StatusError>
    Reply with_fault(const std::string& target, Work&& work, StatusError&& status_error) {
        const auto fault = take_fault(target);
        if (!fault) return work();
        Reply reply;
        switch (fault->mode) {
            case FaultMode::fail_before:
                reply = error_reply(500,
                                    "internal server error (injected fail_before fault); "
                                    "nothing was done, retry with backoff");
                break;
            case FaultMode::rate_limit:
                reply = error_reply(429, "rate limited (injected fault); retry after " +
                                             std::to_string(fault->retry_after_s) + " s");
                reply.headers.emplace_back("Retry-After", std::to_string(fault->retry_after_s));
                break;
            case FaultMode::status_error: reply = status_error(fault->status_code); break;
            case FaultMode::slow:
                std::this_thread::sleep_for(std::chrono::milliseconds(fault->delay_ms));
                reply = work();
                break;
            case FaultMode::fail_after:
                work();
                reply = error_reply(500,
                                    "internal server error after the work ran (injected "
                                    "fail_after fault)");
                break;
            case FaultMode::drop:
                reply = work();
                reply.drop = true;
                break;
            case FaultMode::reset:
                reply = error_reply(500, "reset (injected fault); nothing was done");
                reply.drop = true;
                reply.cut_before_body = true;
                break;
            case FaultMode::dripping:  // the request runs; its answer comes a byte at a time
                reply = work();
                make_hostile(*fault, reply);
                break;
            case FaultMode::huge:
            case FaultMode::endless:
            case FaultMode::redirect:
            case FaultMode::random_status: make_hostile(*fault, reply); break;
            // Hostile rows and lists (issue 30, rows).
            case FaultMode::deep:
            case FaultMode::wide:
            case FaultMode::many_resources: reply = hostile_reply(target, *fault, work()); break;
            case FaultMode::ignores_offset: reply = work(); break;  // applied by read()
        }
        reply.fault = mode_name(fault->mode);
        return reply;
    }

    // ---- reads ----

    Reply read(const httplib::Request& req, const Caller& caller);

    // ---- actions ----

    Reply act(const json& body, const Caller& caller);

    // ---- dispatch ----

    static std::string param_or_empty(const httplib::Request& req, const char* name);

    Reply discover();

    Reply handle(const httplib::Request& req);

    void record(const httplib::Request& req, const Reply& reply);

    void serve(const httplib::Request& req, httplib::Response& res);

    // ---- control path ----

    static void control_json(httplib::Response& res, int status, const json& body);

    void add_fault_from(const httplib::Request& req, httplib::Response& res);

    void inject(Fault fault);

    json stats_json() const;

    json log_json() const;
};

}  // namespace agency::sample
