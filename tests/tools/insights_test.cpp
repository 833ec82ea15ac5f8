// The insight tools (issue 46) end to end over the sample gateway on loopback, on data that
// differs from the defaults (several urls per keyword, other member names, an agency of 40
// clients). Every expected answer is computed here from the gateway's own rows
// (sample::Gateway::rows), independently of the tools: the arithmetic follows the method each
// answer states, and the click model is the one the answer publishes.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/tool_harness.hpp"
#include "tools/insights/insights.hpp"
#include "tools/kit/tool_kit.hpp"

namespace {

using agency::testing::ToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

void register_insights(agency::mcp::Server& server,
                       const std::shared_ptr<agency::tools::Toolbox>& box) {
    agency::tools::insights::register_insight_tools(server, box);
}

std::string date_of(const json& row) {
    for (const char* f : {"tracked_at", "created_at"})
        if (row.contains(f) && row[f].is_string()) return row[f].get<std::string>().substr(0, 10);
    return "";
}

std::string days_before(const std::string& date, int days) {
    using namespace std::chrono;
    const year_month_day ymd{sys_days{year{std::stoi(date.substr(0, 4))} /
                                      std::stoi(date.substr(5, 2)) / std::stoi(date.substr(8, 2))} -
                             std::chrono::days{days}};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
    return text;
}

double round1(double v) { return std::round(v * 10) / 10; }

// The answer's published click model: clicks = volume x ctr[round(position) - 1], 0 past 20.
struct Model {
    std::vector<double> ctr;
    explicit Model(const json& model) : ctr(model.at("ctr").get<std::vector<double>>()) {}
    double clicks(double volume, double position) const {
        const double p = std::round(position);
        if (p < 1 || p > static_cast<double>(ctr.size())) return 0;
        return volume * ctr[static_cast<std::size_t>(p) - 1];
    }
};

// Keyword rows newest date first, as the tools' walk meets them.
std::vector<json> keyword_rows(ToolHarness& h, const std::string& client) {
    std::vector<json> rows;
    for (const json& r : h.gw->rows("keywords", client)) rows.push_back(r);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const json& a, const json& b) { return date_of(a) > date_of(b); });
    return rows;
}

std::vector<std::string> dates_newest_first(const std::vector<json>& rows) {
    std::vector<std::string> dates;
    for (const json& r : rows)
        if (dates.empty() || dates.back() != date_of(r)) dates.push_back(date_of(r));
    return dates;
}

class Insights : public ::testing::Test {
public:
    static ToolReply ok(ToolHarness& h, const std::string& tool, const json& args) {
        ToolReply r = h.call(tool, args);
        EXPECT_EQ(r.rpc_error, 0) << r.response.dump().substr(0, 600);
        EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 600);
        if (r.result.is_object() && !r.is_error()) {
            // What a framework's model reads: at most 4 KB at the default limit.
            const std::string text = r.result["content"][0].value("text", "");
            EXPECT_LE(text.size(), 4096u) << tool << ": " << text;
            if (tool == "get_client_overview") return r;  // the overview resource's shape
            const json& p = r.structured().at("provenance");
            EXPECT_GT(p.at("gateway_requests").get<int>(), 0) << tool;
            EXPECT_FALSE(p.at("method").get<std::string>().empty());
        }
        return r;
    }
};

TEST_F(Insights, QuickWinsAreTheNewestRowsInRangeByClicksGained) {
    ToolHarness h({}, {}, register_insights);
    for (const std::string client : {"demo-law", "demo-plumbing"}) {
        const auto rows = keyword_rows(h, client);
        const auto dates = dates_newest_first(rows);
        ASSERT_GT(dates.size(), 5u);
        struct Best {
            json row;
            std::optional<double> earlier;
        };
        std::map<std::string, Best> best;
        for (const json& r : rows) {
            if (!r["position"].is_number()) continue;
            const std::string k = r["keyword"];
            if (date_of(r) == dates[0]) {
                if (!best.contains(k) || r["position"] < best[k].row["position"]) best[k].row = r;
            } else if (date_of(r) == dates[4] && best.contains(k)) {
                const double p = r["position"];
                if (!best[k].earlier || p < *best[k].earlier) best[k].earlier = p;
            }
        }
        const ToolReply reply = ok(h, "find_quick_wins", {{"client_id", client}});
        const json& s = reply.structured();
        const Model model(s["model"]);
        ASSERT_EQ(s["model"]["target_position"], 3);
        struct Want {
            std::string keyword;
            double position, gain;
            std::optional<double> change;
        };
        std::vector<Want> want;
        for (const auto& [k, b] : best) {
            const double pos = b.row["position"], volume = b.row["search_volume"];
            if (pos < 4 || pos > 20) continue;
            const double gain = std::max(0.0, model.clicks(volume, 3) - model.clicks(volume, pos));
            want.push_back({k, pos, gain, b.earlier ? std::optional(*b.earlier - pos) : std::nullopt});
        }
        std::sort(want.begin(), want.end(), [](const Want& a, const Want& b) {
            if (a.gain != b.gain) return a.gain > b.gain;
            if (a.position != b.position) return a.position < b.position;
            return a.keyword < b.keyword;
        });
        EXPECT_EQ(s["as_of"], dates[0]);
        EXPECT_EQ(s["compared_with"], dates[4]);
        EXPECT_EQ(s["candidates"], want.size()) << client;
        ASSERT_EQ(s["rows"].size(), std::min<std::size_t>(10, want.size()));
        for (std::size_t i = 0; i < s["rows"].size(); ++i) {
            const json& got = s["rows"][i];
            SCOPED_TRACE(client + " row " + std::to_string(i));
            EXPECT_EQ(got["keyword"], want[i].keyword);
            EXPECT_EQ(got["position"].get<double>(), want[i].position);
            EXPECT_EQ(got["estimated_clicks_gain"].get<double>(), std::round(want[i].gain));
            EXPECT_EQ(got["url"], best[want[i].keyword].row["url"]);
            EXPECT_EQ(got["search_volume"], best[want[i].keyword].row["search_volume"]);
            if (want[i].change) {
                EXPECT_EQ(got["position_change"].get<double>(), *want[i].change);
            } else {
                EXPECT_TRUE(got["position_change"].is_null());
            }
        }
    }
    // as_of picks an older tracking date; a range without candidates says so with zero rows.
    const auto dates = dates_newest_first(keyword_rows(h, "demo-law"));
    const ToolReply older = ok(h, "find_quick_wins", {{"client_id", "demo-law"}, {"as_of", dates[3]}});
    EXPECT_EQ(older.structured()["as_of"], dates[3]);
    const ToolReply bad = h.call("find_quick_wins",
                                 {{"client_id", "demo-law"}, {"min_position", 30}, {"max_position", 5}});
    EXPECT_EQ(bad.reason(), "validation");
}

struct UrlWant {
    std::size_t dates = 0;
    std::string first, last;
    double best = 1e9, last_position = 0;
};

struct KeywordWant {
    std::map<std::string, UrlWant> urls;
    std::vector<std::string> best_url_by_date;  // newest first
    std::vector<std::string> date_of_best;
    std::vector<double> best_position;
    double volume = 0;
    bool volume_set = false;
    std::size_t switches() const {
        std::size_t n = 0;
        for (std::size_t i = 1; i < best_url_by_date.size(); ++i)
            n += best_url_by_date[i] != best_url_by_date[i - 1];
        return n;
    }
};

TEST_F(Insights, CannibalizationNamesEveryUrlThatRankedAndHowOftenTheyTraded) {
    ToolHarness plain({}, {}, register_insights);
    const ToolReply none = ok(plain, "find_cannibalization", {{"client_id", "demo-law"}});
    EXPECT_EQ(none.structured()["candidates"], 0);
    EXPECT_GT(none.structured()["keywords_seen"].get<int>(), 0);

    agency::sample::Options options;
    options.keyword_url_switches = true;
    ToolHarness h(options, {}, register_insights);
    const auto rows = keyword_rows(h, "demo-law");
    const std::string to = date_of(rows.front()), from = days_before(to, 90);
    std::map<std::string, KeywordWant> want;
    for (const json& r : rows) {
        const std::string d = date_of(r);
        if (d < from || !r["position"].is_number()) continue;
        KeywordWant& k = want[r["keyword"].get<std::string>()];
        const std::string url = r["url"];
        const double pos = r["position"];
        if (!k.volume_set) k.volume = r["search_volume"], k.volume_set = true;
        UrlWant& u = k.urls[url];
        if (u.dates == 0) u.last = d, u.last_position = pos;
        if (u.first != d) ++u.dates;
        u.first = d;
        u.best = std::min(u.best, pos);
        if (k.date_of_best.empty() || k.date_of_best.back() != d) {
            k.date_of_best.push_back(d), k.best_url_by_date.push_back(url), k.best_position.push_back(pos);
        } else if (pos < k.best_position.back()) {
            k.best_url_by_date.back() = url, k.best_position.back() = pos;
        }
    }
    std::vector<std::string> order;
    for (const auto& [k, w] : want)
        if (w.urls.size() >= 2) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
        const auto &x = want[a], &y = want[b];
        if (x.switches() != y.switches()) return x.switches() > y.switches();
        return x.volume != y.volume ? x.volume > y.volume : a < b;
    });
    ASSERT_GT(order.size(), 2u) << "the sample's url switches made no cannibalization";
    const ToolReply reply = ok(h, "find_cannibalization", {{"client_id", "demo-law"}});
    const json& s = reply.structured();
    EXPECT_EQ(s["from"], from);
    EXPECT_EQ(s["to"], to);
    EXPECT_EQ(s["candidates"], order.size());
    ASSERT_EQ(s["keywords"].size(), std::min<std::size_t>(10, order.size()));
    for (std::size_t i = 0; i < s["keywords"].size(); ++i) {
        const json& got = s["keywords"][i];
        const KeywordWant& w = want[order[i]];
        SCOPED_TRACE(order[i]);
        EXPECT_EQ(got["keyword"], order[i]);
        EXPECT_EQ(got["switches"], w.switches());
        ASSERT_EQ(got["urls"].size(), w.urls.size());
        for (const json& u : got["urls"]) {
            const UrlWant& x = w.urls.at(u["url"].get<std::string>());
            EXPECT_EQ(u["dates"], x.dates);
            EXPECT_EQ(u["first"], x.first);
            EXPECT_EQ(u["last"], x.last);
            EXPECT_EQ(u["best"].get<double>(), x.best);
            EXPECT_EQ(u["last_position"].get<double>(), x.last_position);
        }
    }
}

struct Sums {
    double weighted = 0, volume = 0, clicks = 0;
    std::size_t rows = 0;
    double position() const { return weighted / volume; }
};

TEST_F(Insights, DecliningPagesCompareVolumeWeightedPositionsOverTwoWindows) {
    ToolHarness h({}, {}, register_insights);
    for (const auto& [client, weeks] : {std::pair<std::string, int>{"demo-law", 4},
                                        std::pair<std::string, int>{"demo-plumbing", 2}}) {
        SCOPED_TRACE(client);
        const ToolReply reply =
            ok(h, "find_declining_pages", {{"client_id", client}, {"weeks", weeks}});
        const json& s = reply.structured();
        const Model model(s["model"]);
        const auto rows = keyword_rows(h, client);
        const std::string newest = date_of(rows.front());
        const std::string split = days_before(newest, 7 * weeks);
        const std::string oldest = days_before(newest, 14 * weeks);
        std::map<std::string, std::pair<Sums, Sums>> pages;  // before, after
        std::set<std::string> before_dates, after_dates;
        for (const json& r : rows) {
            const std::string d = date_of(r);
            if (d <= oldest) break;
            const bool after = d > split;
            (after ? after_dates : before_dates).insert(d);
            const double pos = r["position"], volume = r["search_volume"];
            auto& page = pages[r["url"].get<std::string>()];
            Sums& sums = after ? page.second : page.first;
            sums.weighted += volume * pos, sums.volume += volume, ++sums.rows;
            sums.clicks += model.clicks(volume, pos);
        }
        struct Want {
            std::string url;
            double lost, fell, before, after;
        };
        std::vector<Want> want;
        for (const auto& [url, w] : pages) {
            if (w.first.rows == 0 || w.second.rows == 0) continue;
            const double lost = w.first.clicks / static_cast<double>(before_dates.size()) -
                                w.second.clicks / static_cast<double>(after_dates.size());
            if (lost > 0)
                want.push_back({url, lost, w.second.position() - w.first.position(),
                                w.first.position(), w.second.position()});
        }
        std::sort(want.begin(), want.end(), [](const Want& a, const Want& b) {
            if (a.lost != b.lost) return a.lost > b.lost;
            return a.fell != b.fell ? a.fell > b.fell : a.url < b.url;
        });
        EXPECT_EQ(s["before"]["tracking_dates"], before_dates.size());
        EXPECT_EQ(s["after"]["tracking_dates"], after_dates.size());
        EXPECT_EQ(s["after"]["to"], newest);
        EXPECT_EQ(s["candidates"], want.size());
        ASSERT_FALSE(want.empty()) << "no page declined in the sample: the test proves nothing";
        ASSERT_EQ(s["pages"].size(), std::min<std::size_t>(10, want.size()));
        for (std::size_t i = 0; i < s["pages"].size(); ++i) {
            const json& got = s["pages"][i];
            EXPECT_EQ(got["url"], want[i].url) << i;
            EXPECT_NEAR(got["clicks_lost"].get<double>(), std::round(want[i].lost), 1.0);
            EXPECT_NEAR(got["position_before"].get<double>(), round1(want[i].before), 0.11);
            EXPECT_NEAR(got["position_after"].get<double>(), round1(want[i].after), 0.11);
        }
    }
}

void expect_lost_backlinks(ToolHarness& h, const std::string& client, const std::string& authority,
                           const std::function<bool(const json&)>& is_lost) {
    const json rows = h.gw->rows("backlinks", client);
    std::vector<double> want;
    std::set<std::pair<std::string, double>> lost;
    for (const json& r : rows)
        if (is_lost(r)) {
            want.push_back(r[authority].get<double>());
            lost.insert({r["source_url"].get<std::string>(), r[authority].get<double>()});
        }
    std::sort(want.rbegin(), want.rend());
    ASSERT_GT(want.size(), 3u);
    const ToolReply reply = Insights::ok(h, "find_lost_backlinks", {{"client_id", client}});
    const json& s = reply.structured();
    EXPECT_EQ(s["total_backlinks"], rows.size());
    EXPECT_EQ(s["total_lost"], want.size());
    EXPECT_EQ(s["authority_member"], authority);
    ASSERT_EQ(s["rows"].size(), std::min<std::size_t>(10, want.size()));
    for (std::size_t i = 0; i < s["rows"].size(); ++i) {
        const json& got = s["rows"][i];
        EXPECT_EQ(got[authority].get<double>(), want[i]) << i;  // strongest first
        EXPECT_TRUE(lost.contains({got["source_url"].get<std::string>(), got[authority].get<double>()}))
            << got.dump();
    }
}

TEST_F(Insights, LostBacklinksStrongestFirstWhateverTheMembersAreNamed) {
    ToolHarness h({}, {}, register_insights);
    expect_lost_backlinks(h, "demo-plumbing", "domain_authority",
                          [](const json& r) { return r["status"] == "lost"; });
    EXPECT_EQ(ok(h, "find_lost_backlinks", {{"client_id", "demo-plumbing"}}).structured()["lost_mark"],
              "status");
    agency::sample::Options renamed;
    renamed.other_member_names = true;
    ToolHarness other(renamed, {}, register_insights);
    ASSERT_FALSE(other.gw->rows("backlinks", "demo-plumbing")[0].contains("status"));
    expect_lost_backlinks(other, "demo-plumbing", "authority_score",
                          [](const json& r) { return r["lost"] == true; });
}

// ---- triage --------------------------------------------------------------------------------

struct ClientWant {
    std::string id;
    double urgency = 0;
    std::size_t dropped = 0;
};

// The urgency of one client, from its rows, by the scoring the answer states.
ClientWant triage_expected(ToolHarness& h, const std::string& id, int weeks, const Model& model,
                           const std::string& since) {
    ClientWant out{id};
    const auto rows = keyword_rows(h, id);
    double clicks_change = 0;
    if (!rows.empty()) {
        const std::string newest = date_of(rows.front()), cutoff = days_before(newest, 7 * weeks);
        std::string then;
        for (const json& r : rows)
            if (date_of(r) <= cutoff) {
                then = date_of(r);
                break;
            }
        std::map<std::string, std::pair<double, double>> at;  // keyword: now, then
        std::map<std::string, double> volume;
        for (const json& r : rows) {
            const std::string k = r["keyword"];
            if (date_of(r) == newest) at[k].first = r["position"], volume[k] = r["search_volume"];
            if (date_of(r) == then) at[k].second = r["position"];
        }
        for (const auto& [k, p] : at) {
            if (p.first == 0 || p.second == 0) continue;
            if (p.first - p.second >= 3) ++out.dropped;
            clicks_change += model.clicks(volume[k], p.first) - model.clicks(volume[k], p.second);
        }
    }
    out.urgency += static_cast<double>(out.dropped);
    if (clicks_change < 0) out.urgency += -clicks_change / 50;
    std::vector<json> reports;
    for (const json& r : h.gw->rows("seo_reports", id))
        if (r["score"].is_number()) reports.push_back(r);
    std::sort(reports.begin(), reports.end(), [](const json& a, const json& b) {
        return a["created_at"].get<std::string>() > b["created_at"].get<std::string>();
    });
    if (!reports.empty() && reports[0]["score"].get<double>() < 50) out.urgency += 10;
    if (reports.size() >= 2) {
        const double change = reports[0]["score"].get<double>() - reports[1]["score"].get<double>();
        if (change < 0) out.urgency += -change / 2;
    }
    for (const json& c : h.gw->rows("citations", id)) {
        const std::string a = c.value("accuracy", c.value("accuracy_status", ""));
        if (a == "inconsistent") out.urgency += 2;
    }
    for (const json& r : h.gw->rows("reviews", id))
        if (r["sentiment"] == "negative" && r["created_at"].get<std::string>().substr(0, 10) >= since)
            out.urgency += 3;
    for (const json& b : h.gw->rows("backlinks", id))
        if (b.value("status", "") == "lost") out.urgency += 0.5;
    out.urgency = round1(out.urgency);
    return out;
}

agency::tools::Settings fixed_today(const agency::base::Clock& clock) {
    agency::tools::Settings s;
    s.clock = &clock;
    return s;
}

TEST_F(Insights, TriageRanksFortyClientsByTheStatedScoring) {
    // "Today" a week after the sample data ends: the reviews window covers its last weeks.
    static const agency::testing::ManualClock clock(std::chrono::sys_days{
        std::chrono::year{2026} / 11 / 21});
    agency::sample::Options options;
    options.agency_clients = 37;
    options.agency_tracking_dates = 12;  // the 8 the triage reads, and more
    ToolHarness h(options, fixed_today(clock), register_insights);
    // The rows are made before the first call, apart from its budget.
    ASSERT_EQ(h.gw->rows("clients", "").size(), 40u);
    {  // every keyword its own words, so "per keyword" means one series
        const auto rows = keyword_rows(h, "agency-05");
        std::set<std::string> newest;
        for (const json& r : rows)
            if (date_of(r) == date_of(rows.front())) newest.insert(r["keyword"].get<std::string>());
        EXPECT_EQ(newest.size(), 50u);
    }
    const ToolReply reply = ok(h, "triage_clients", json::object());
    const json& s = reply.structured();
    EXPECT_EQ(s["clients_reached"], 40);
    EXPECT_EQ(s["triaged"], 40);
    EXPECT_FALSE(s.contains("partial"));
    EXPECT_EQ(s["reviews_since"], "2026-10-24");
    // The model is find_quick_wins's (one click model for every insight).
    const Model model(ok(h, "find_quick_wins", {{"client_id", "demo-law"}}).structured()["model"]);
    std::vector<ClientWant> want;
    for (const json& c : h.gw->rows("clients", ""))
        want.push_back(triage_expected(h, c["id"].get<std::string>(), 4, model, "2026-10-24"));
    std::sort(want.begin(), want.end(), [](const ClientWant& a, const ClientWant& b) {
        return a.urgency != b.urgency ? a.urgency > b.urgency : a.id < b.id;
    });
    ASSERT_EQ(s["clients"].size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        const json& got = s["clients"][i];
        SCOPED_TRACE(got.dump());
        EXPECT_NEAR(got["urgency"].get<double>(), want[i].urgency, 0.11);
        EXPECT_EQ(got["facts"]["keywords_dropped"], want[i].dropped);
        EXPECT_FALSE(got["reasons"].empty());
    }
    // The ids in order, where urgencies do not tie within rounding.
    for (std::size_t i = 0; i + 1 < 10; ++i)
        if (want[i].urgency - want[i + 1].urgency > 0.2) {
            EXPECT_EQ(s["clients"][i]["client_id"], want[i].id);
        }
}

TEST_F(Insights, TriageOfAScopedKeyReadsOnlyItsClients) {
    agency::sample::Options options;
    options.agency_clients = 8;
    options.agency_tracking_dates = 12;
    // "Today" months after the data: no review falls in the window.
    static const agency::testing::ManualClock later(std::chrono::sys_days{
        std::chrono::year{2027} / 6 / 1});
    ToolHarness h(options, fixed_today(later), register_insights);
    agency::mcp::Principal scoped;
    scoped.name = "contractor";
    scoped.scopes = {"read"};
    scoped.clients = {"agency-03", "agency-07"};
    h.gw->clear_log();
    const ToolReply reply = h.call_as(scoped, "triage_clients", {{"limit", 5}});
    ASSERT_FALSE(reply.is_error()) << reply.response.dump();
    std::set<std::string> listed;
    for (const json& c : reply.structured()["clients"]) {
        listed.insert(c["client_id"].get<std::string>());
        // Rows that carry a sentiment, none recent: 0 negative reviews, not "cannot tell".
        EXPECT_EQ(c["facts"]["negative_reviews"], 0) << c.dump();
    }
    EXPECT_EQ(listed, (std::set<std::string>{"agency-03", "agency-07"}));
    EXPECT_EQ(reply.structured()["clients_reached"], 2);
    std::set<std::string> read;
    for (const auto& request : h.gw->request_log())
        if (!request.client_id.empty()) read.insert(request.client_id);
    EXPECT_EQ(read, (std::set<std::string>{"agency-03", "agency-07"}));
}

// A budget too short for every client: the answer is partial and names each client it did not
// read, and every client is either triaged or named.
TEST_F(Insights, TriagePastItsBudgetIsPartialAndNamesTheClientsMissing) {
    agency::sample::Options options;
    options.agency_clients = 21;
    options.agency_tracking_dates = 8;
    ToolHarness h(options, {}, register_insights, [](agency::gateway::Config& c) {
        c.call_timeout = std::chrono::milliseconds(1500);
        c.read_timeout = std::chrono::milliseconds(1500);
    });
    ASSERT_EQ(h.gw->rows("clients", "").size(), 24u);
    agency::sample::Fault slow;
    slow.target = "keywords";
    slow.mode = agency::sample::FaultMode::slow;
    slow.delay_ms = 1000;
    slow.percent = 100;
    slow.count = 0;
    h.gw->inject(slow);
    const ToolReply reply = h.call("triage_clients", {{"limit", 50}});
    ASSERT_FALSE(reply.is_error()) << reply.response.dump().substr(0, 600);
    const json& s = reply.structured();
    EXPECT_EQ(s["partial"], true);
    ASSERT_TRUE(s.contains("missing")) << s.dump().substr(0, 800);
    std::set<std::string> seen;
    for (const json& m : s["missing"]) {
        seen.insert(m["client_id"].get<std::string>());
        EXPECT_NE(m["reason"].get<std::string>().find("budget"), std::string::npos) << m;
    }
    for (const json& c : s["clients"]) seen.insert(c["client_id"].get<std::string>());
    EXPECT_EQ(seen.size(), 24u);
    EXPECT_EQ(s["triaged"].get<std::size_t>() + s["missing"].size(), 24u);
}

TEST_F(Insights, ClientOverviewIsATool) {
    ToolHarness h({}, {}, register_insights);
    const ToolReply reply = ok(h, "get_client_overview", {{"client_id", "demo-law"}});
    const json& s = reply.structured();
    EXPECT_EQ(s["client"]["id"], "demo-law");
    const auto rows = keyword_rows(h, "demo-law");
    std::set<std::string> newest;
    for (const json& r : rows)
        if (date_of(r) == date_of(rows.front())) newest.insert(r["keyword"].get<std::string>());
    EXPECT_EQ(s["keywords"]["tracked_keywords"], newest.size());
    EXPECT_EQ(s["keywords"]["last_tracked"], date_of(rows.front()));
    EXPECT_EQ(s["audits"]["count"], h.gw->rows("seo_reports", "demo-law").size());
    const ToolReply unknown = h.call("get_client_overview", {{"client_id", "no-such-client"}});
    EXPECT_EQ(unknown.reason(), "not_found");
}

}  // namespace
