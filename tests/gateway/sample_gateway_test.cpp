// The sample gateway over real HTTP: discovery, reads and their parameter rules, every action,
// auth, faults, the control path, the request log, determinism and the bulk client.
#include "gateway/sample/sample_gateway.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gateway/actions.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

using agency::sample::ApiKey;
using agency::sample::Fault;
using agency::sample::FaultMode;
using agency::sample::Gateway;
using agency::sample::Options;
using agency::sample::Server;
using json = nlohmann::json;

const std::vector<std::string> kClients{"demo-plumbing", "demo-dental", "demo-law"};

// The spec's resource table, with <vendor>_calls made concrete.
const std::vector<std::string> kSpecResources{"clients",
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
                                              "callrail_calls",
                                              "call_scores",
                                              "call_transcriptions",
                                              "integrations"};

// The spec's action table: required fields.
const std::map<std::string, std::vector<std::string>> kSpecActions{
    {"seo_audit", {"url"}},
    {"optimize_page", {"url"}},
    {"generate_keywords", {}},
    {"generate_topical_map", {"topic"}},
    {"generate_blog", {"keyword"}},
    {"generate_blog_image", {"title"}},
    {"generate_geo_article", {"keyword", "city", "state"}},
    {"generate_press_release", {"headline"}},
    {"generate_gbp_post", {"topic"}},
    {"deploy_blog", {}},
    {"index_url", {"url"}},
    {"fetch_backlinks", {}},
    {"generate_outreach_email", {"prospectUrl"}},
    {"send_prospect_email", {"to", "subject", "html"}},
    {"run_grid_search", {"keyword", "lat", "lng"}},
    {"run_llm_visibility", {"prompt", "brand_name"}},
    {"score_call", {"transcript"}},
};

// A valid body (without action and client_id) for every action.
const std::map<std::string, json> kValidFields{
    {"seo_audit", {{"url", "https://summitlawgroup.example/pricing"}}},
    {"optimize_page",
     {{"url", "https://summitlawgroup.example/services/divorce-lawyer"},
      {"keyword", "divorce lawyer seattle"}}},
    {"generate_keywords", {{"seed", "probate lawyer"}}},
    {"generate_topical_map", {{"topic", "probate"}, {"depth", 3}}},
    {"generate_blog", {{"keyword", "probate lawyer seattle"}}},
    {"generate_blog_image", {{"title", "Probate in Washington, Explained"}}},
    {"generate_geo_article",
     {{"keyword", "car accident attorney"}, {"city", "Tacoma"}, {"state", "WA"}}},
    {"generate_press_release", {{"headline", "Summit Law Group Opens a Tacoma Office"}}},
    {"generate_gbp_post", {{"topic", "Free consultations in December"}}},
    {"deploy_blog", json::object()},
    {"index_url", {{"url", "https://summitlawgroup.example/blog/new-post"}}},
    {"fetch_backlinks", json::object()},
    {"generate_outreach_email",
     {{"prospectUrl", "https://www.seattlelegalnews.example/contributors"}}},
    {"send_prospect_email",
     {{"to", "editor@seattlelegalnews.example"},
      {"subject", "A guest article"},
      {"html", "<p>Hi</p>"}}},
    {"run_grid_search",
     {{"keyword", "injury lawyer near me"}, {"lat", 47.6062}, {"lng", -122.3321}}},
    {"run_llm_visibility",
     {{"prompt", "best injury lawyer in seattle"}, {"brand_name", "Summit Law Group"}}},
    {"score_call",
     {{"transcript", "Caller: I was in a car accident and want to book a consultation today."},
      {"call_id", "call-law-000003"}}},
};

// True when `text` has the shape of `pattern`, where 'd' stands for any digit.
bool shaped(const std::string& text, std::string_view pattern) {
    if (text.size() != pattern.size()) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool digit = text[i] >= '0' && text[i] <= '9';
        if (pattern[i] == 'd' ? !digit : text[i] != pattern[i]) return false;
    }
    return true;
}
bool is_iso_time(const std::string& text) { return shaped(text, "dddd-dd-ddTdd:dd:ddZ"); }
bool is_iso_date(const std::string& text) { return shaped(text, "dddd-dd-dd"); }

std::string iso_now_minus(std::chrono::seconds back) {
    const std::time_t t =
        std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() - back);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

struct Reply {
    int status = 0;
    json body;
    std::string raw;
    httplib::Headers headers;
};

class SampleGateway : public ::testing::Test {
protected:
    void SetUp() override { start(std::make_shared<Gateway>()); }

    void start(std::shared_ptr<Gateway> gateway) {
        client_.reset();
        server_.reset();
        gateway_ = std::move(gateway);
        server_ = std::make_unique<Server>(gateway_);
        port_ = server_->start();
        client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
        // The first read makes the rows (100,000 for demo-bulk): seconds under ASan on a busy
        // machine. A hang still ends; no test here measures time.
        client_->set_read_timeout(60, 0);
    }

    static Reply reply_of(const httplib::Result& res) {
        Reply r;
        if (!res) {
            ADD_FAILURE() << "HTTP error " << httplib::to_string(res.error());
            return r;
        }
        r.status = res->status;
        r.raw = res->body;
        r.headers = res->headers;
        r.body = json::parse(res->body, nullptr, false);
        return r;
    }

    Reply get(const std::string& query, const httplib::Headers& headers = {}) {
        return reply_of(client_->Get(query.empty() ? "/api" : "/api?" + query, headers));
    }

    Reply post(const json& body, const httplib::Headers& headers = {}) {
        return reply_of(client_->Post("/api", headers, body.dump(), "application/json"));
    }

    Reply act(const std::string& action, const std::string& client_id,
              json fields = json::object()) {
        fields["action"] = action;
        fields["client_id"] = client_id;
        return post(fields);
    }

    // Every row of a read, paging with `page` rows at a time.
    std::vector<json> read_all(const std::string& query, int page = 1000) {
        std::vector<json> rows;
        for (int offset = 0;; offset += page) {
            const Reply r =
                get(query + "&limit=" + std::to_string(page) + "&offset=" + std::to_string(offset));
            EXPECT_EQ(r.status, 200) << r.raw;
            if (r.status != 200) break;
            for (const auto& row : r.body["data"]) rows.push_back(row);
            if (!r.body["pagination"]["has_more"].get<bool>()) break;
        }
        return rows;
    }

    std::shared_ptr<Gateway> gateway_;
    std::unique_ptr<Server> server_;
    std::unique_ptr<httplib::Client> client_;  // declared last: closed before the server stops
    int port_ = 0;

    void TearDown() override {
        client_.reset();
        server_.reset();
    }
};

TEST_F(SampleGateway, DiscoveryListsEverySpecResourceAndAction) {
    const Reply r = get("");
    ASSERT_EQ(r.status, 200);
    const auto resources = r.body["resources"].get<std::vector<std::string>>();
    EXPECT_EQ(std::set<std::string>(resources.begin(), resources.end()),
              std::set<std::string>(kSpecResources.begin(), kSpecResources.end()));
    EXPECT_EQ(resources.size(), kSpecResources.size());

    ASSERT_EQ(r.body["actions"].size(), kSpecActions.size());
    for (const auto& action : r.body["actions"]) {
        const auto name = action["action"].get<std::string>();
        ASSERT_TRUE(kSpecActions.count(name)) << name;
        EXPECT_EQ(action["required_fields"].get<std::vector<std::string>>(), kSpecActions.at(name))
            << name;
        EXPECT_FALSE(action["description"].get<std::string>().empty()) << name;
    }
}

TEST_F(SampleGateway, CallVendorNamesTheSecondCallResource) {
    Options options;
    options.call_vendor = "ringcentral";
    start(std::make_shared<Gateway>(options));
    const auto resources = get("").body["resources"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(resources.begin(), resources.end(), "ringcentral_calls"), resources.end());
    EXPECT_EQ(std::find(resources.begin(), resources.end(), "callrail_calls"), resources.end());
    EXPECT_EQ(get("resource=ringcentral_calls&client_id=demo-dental").body["pagination"]["total"],
              40);
}

// What an action records is stamped with the gateway's clock (Options::clock), not the
// process's: a test can fix "now".
TEST_F(SampleGateway, ActionsStampWhatTheyRecordWithTheGivenClock) {
    std::tm at{};
    at.tm_year = 2031 - 1900;
    at.tm_mon = 4;
    at.tm_mday = 6;
    at.tm_hour = 7;
    at.tm_min = 8;
    at.tm_sec = 9;
    const agency::testing::ManualClock clock(std::chrono::system_clock::from_time_t(timegm(&at)));
    Options options;
    options.clock = &clock;
    start(std::make_shared<Gateway>(options));
    const Reply first = act("index_url", "demo-law", {{"url", "https://x.example/a"}});
    ASSERT_EQ(first.status, 200) << first.raw;
    EXPECT_EQ(first.body["data"]["created_at"], "2031-05-06T07:08:09Z") << first.raw;
    clock.advance(std::chrono::hours(24));
    const Reply next = act("index_url", "demo-law", {{"url", "https://x.example/b"}});
    ASSERT_EQ(next.status, 200) << next.raw;
    EXPECT_EQ(next.body["data"]["created_at"], "2031-05-07T07:08:09Z") << next.raw;
    start(std::make_shared<Gateway>());  // the fixture's gateway outlives no clock of ours
}

TEST_F(SampleGateway, EveryResourceHasRowsForEveryClient) {
    for (const auto& resource : kSpecResources) {
        if (resource == "clients") continue;
        for (const auto& client : kClients) {
            const Reply r = get("resource=" + resource + "&client_id=" + client + "&limit=1000");
            ASSERT_EQ(r.status, 200) << resource << " " << r.raw;
            EXPECT_EQ(r.body["resource"], resource);
            EXPECT_EQ(r.body["client_id"], client);
            const auto& data = r.body["data"];
            ASSERT_FALSE(data.empty()) << resource << " for " << client;
            EXPECT_EQ(r.body["pagination"]["total"].get<std::size_t>(),
                      resource != "keywords" ? data.size() : client == "demo-law" ? 650u : 1500u)
                << resource;
            std::set<std::string> ids;
            for (const auto& row : data) {
                ASSERT_TRUE(row["id"].is_string()) << resource;
                ids.insert(row["id"].get<std::string>());
                for (const char* field : {"created_at", "updated_at", "fetched_at", "scored_at"}) {
                    if (resource == "keywords" || !row.contains(field) || row[field].is_null())
                        continue;
                    EXPECT_TRUE(is_iso_time(row[field].get<std::string>()))
                        << resource << "." << field << " = " << row[field];
                }
            }
            EXPECT_EQ(ids.size(), data.size()) << "duplicate ids in " << resource;
        }
    }
}

TEST_F(SampleGateway, ClientsListsTheSampleClientsWithoutClientId) {
    const Reply r = get("resource=clients");
    ASSERT_EQ(r.status, 200);
    EXPECT_FALSE(r.body.contains("client_id"));
    std::set<std::string> ids;
    for (const auto& row : r.body["data"]) {
        ids.insert(row["id"].get<std::string>());
        for (const char* field : {"name", "status", "website", "auto_deploy", "city", "state",
                                  "lat", "lng", "brand_name"}) {
            EXPECT_TRUE(row.contains(field)) << field;
        }
        EXPECT_EQ(row["auto_deploy"].get<bool>(), row["id"] == agency::sample::kAutoDeployClient);
    }
    EXPECT_EQ(ids, std::set<std::string>(kClients.begin(), kClients.end()));
    EXPECT_EQ(get("resource=clients&filter_field=id&filter_value=demo-law").body["data"].size(),
              1u);
}

TEST_F(SampleGateway, KeywordRowsHaveTheSpecShapeAndRankingHistories) {
    const auto rows =
        read_all("resource=keywords&client_id=demo-plumbing&order=tracked_at&direction=asc");
    ASSERT_EQ(rows.size(), 1500u);  // 25 keywords x 60 dates
    const std::set<std::string> expected{"id",         "keyword",       "position",
                                         "url",        "search_volume", "difficulty",
                                         "created_at", "tracked_at",    "status",
                                         "intent"};
    std::map<std::string, std::set<std::string>> dates_by_keyword;
    std::string previous;
    for (const auto& row : rows) {
        std::set<std::string> keys;
        for (const auto& [k, v] : row.items()) keys.insert(k);
        ASSERT_EQ(keys, expected) << row;
        EXPECT_TRUE(row["keyword"].is_string());
        EXPECT_TRUE(row["position"].is_number());
        EXPECT_EQ(row["url"].get<std::string>().rfind("https://", 0), 0u);
        EXPECT_TRUE(row["search_volume"].is_number());
        EXPECT_TRUE(row["difficulty"].is_number());
        EXPECT_TRUE(is_iso_date(row["created_at"].get<std::string>()));
        const auto tracked = row["tracked_at"].get<std::string>();
        EXPECT_TRUE(is_iso_date(tracked));
        EXPECT_LE(previous, tracked) << "not ordered by tracked_at";
        previous = tracked;
        EXPECT_TRUE(row["status"] == "active" || row["status"] == "paused");
        dates_by_keyword[row["keyword"].get<std::string>()].insert(tracked);
    }
    EXPECT_EQ(dates_by_keyword.size(), 25u);
    for (const auto& [keyword, dates] : dates_by_keyword) EXPECT_EQ(dates.size(), 60u) << keyword;
}

TEST_F(SampleGateway, ResourcesCarryTheFieldsTheirFiltersAndOrdersName) {
    const std::map<std::string, std::vector<std::string>> fields{
        {"seo_tasks", {"status", "category_id", "created_at", "priority", "url", "task_type"}},
        {"seo_reports", {"url", "score", "issues_found", "created_at", "share_url", "issues"}},
        {"blogs",
         {"status", "published", "category_id", "keyword", "post_title", "deployment_target",
          "created_at", "updated_at", "deployed_at"}},
        {"backlinks",
         {"source_type", "source_id", "external_pages", "linking_domains", "anchor",
          "source_authority", "domain_authority", "first_seen", "fetched_at"}},
        {"anchor_texts", {"anchor", "source_id"}},
        {"top_linked_pages", {"url", "linking_domains"}},
        {"domain_metrics", {"domain_authority", "page_authority", "spam_score", "fetched_at"}},
        {"backlink_outreach", {"status", "prospect_url", "email_to", "subject", "html"}},
        {"citations", {"status", "accuracy", "directory"}},
        {"reviews", {"sentiment", "rating", "created_at"}},
        {"grid_searches", {"keyword", "tracked_at"}},
        {"competitors", {"appearances"}},
        {"llm_reports", {"scored_at", "share_url", "brand_name", "prompt"}},
        {"ai_summaries", {"source_id", "source_type"}},
        {"ai_training", {"source_id"}},
        {"call_tracking_calls", {"created_at", "source", "duration", "transcript"}},
        {"callrail_calls", {"created_at", "source", "duration", "transcript"}},
        {"call_scores", {"lead_grade", "call_id"}},
        {"call_transcriptions", {"quality_grade", "call_id"}},
        {"integrations", {"status"}},
        {"geo_articles", {"status", "city", "state", "keyword"}},
        {"topical_maps", {"topic", "created_at"}},
        {"press_releases", {"status", "headline"}},
        {"gbp_profiles", {"status"}},
        {"gbp_posts", {"status", "topic"}},
    };
    for (const auto& [resource, names] : fields) {
        for (const auto& row : gateway_->rows(resource, "demo-dental")) {
            for (const auto& name : names)
                EXPECT_TRUE(row.contains(name)) << resource << "." << name;
        }
    }
    for (const auto& report : gateway_->rows("seo_reports", "demo-law")) {
        EXPECT_EQ(report["issues"].size(), report["issues_found"].get<std::size_t>());
        // The severity split, nested and flat as deployments differ in sending it.
        EXPECT_EQ(report["critical_issues"], report["issue_counts"]["critical"]);
        EXPECT_EQ(report["warnings"], report["issue_counts"]["warning"]);
        for (const auto& issue : report["issues"]) {
            EXPECT_TRUE(issue.contains("severity") && issue.contains("page") &&
                        issue.contains("recommendation"));
        }
    }
    for (const auto& blog : gateway_->rows("blogs", "demo-dental")) {
        EXPECT_EQ(blog["published"].get<bool>(), blog["status"] == "published");
        EXPECT_EQ(blog["deployed_at"].is_null(), !blog["published"].get<bool>());
    }
}

TEST_F(SampleGateway, PagingYieldsEveryRowExactlyOnce) {
    for (const std::string order : {"", "&order=tracked_at", "&order=created_at&direction=asc"}) {
        const std::string query = "resource=keywords&client_id=demo-dental" + order;
        const auto rows = read_all(query, 97);
        std::set<std::string> ids;
        for (const auto& row : rows) ids.insert(row["id"].get<std::string>());
        EXPECT_EQ(rows.size(), 1500u) << order;
        EXPECT_EQ(ids.size(), 1500u) << order;
    }
    const Reply last = get("resource=keywords&client_id=demo-dental&limit=100&offset=1450");
    EXPECT_EQ(last.body["data"].size(), 50u);
    EXPECT_EQ(last.body["pagination"],
              (json{{"total", 1500}, {"limit", 100}, {"offset", 1450}, {"has_more", false}}));
    const Reply middle = get("resource=keywords&client_id=demo-dental&limit=100&offset=1300");
    EXPECT_TRUE(middle.body["pagination"]["has_more"].get<bool>());
    const Reply beyond = get("resource=keywords&client_id=demo-dental&offset=5000");
    EXPECT_EQ(beyond.status, 200);
    EXPECT_TRUE(beyond.body["data"].empty());
    EXPECT_EQ(get("resource=keywords&client_id=demo-dental").body["pagination"]["limit"], 100);
}

TEST_F(SampleGateway, OrderingSortsAndFallsBackToIdForMissingFields) {
    auto values = [&](const std::string& query, const char* field) {
        std::vector<json> out;
        const Reply r = get(query);  // keeps the body alive through the loop
        for (const auto& row : r.body["data"]) out.push_back(row[field]);
        return out;
    };
    const auto asc = values(
        "resource=competitors&client_id=demo-law&order=appearances&direction=asc", "appearances");
    EXPECT_TRUE(std::is_sorted(asc.begin(), asc.end()));
    const auto desc = values("resource=reviews&client_id=demo-law&order=created_at", "created_at");
    EXPECT_TRUE(std::is_sorted(desc.rbegin(), desc.rend()));
    // Blogs have no scored_at: every row "lacks" it, so the id decides, in the requested direction.
    const auto ids =
        values("resource=blogs&client_id=demo-law&order=scored_at&direction=asc", "id");
    EXPECT_EQ(ids.size(), 12u);
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));

    // Rows lacking the field sort after those that have it, in either direction.
    ASSERT_EQ(act("score_call", "demo-law", {{"transcript", "please book me"}}).status, 200);
    for (const std::string direction : {"asc", "desc"}) {
        const auto rows =
            get("resource=call_scores&client_id=demo-law&limit=1000&order=updated_at&direction=" +
                direction)
                .body["data"];
        ASSERT_FALSE(rows.empty());
        // No call_scores row has updated_at: ids decide.
        std::vector<std::string> row_ids;
        for (const auto& row : rows) row_ids.push_back(row["id"].get<std::string>());
        if (direction == "asc")
            EXPECT_TRUE(std::is_sorted(row_ids.begin(), row_ids.end()));
        else
            EXPECT_TRUE(std::is_sorted(row_ids.rbegin(), row_ids.rend()));
    }
    const auto outreach = get("resource=backlink_outreach&client_id=demo-law&limit=1000&order="
                              "updated_at&direction=asc")
                              .body["data"];
    EXPECT_EQ(outreach.size(), 8u);
}

TEST_F(SampleGateway, InvalidParametersAnswer400ListingAllowedValues) {
    const std::string base = "resource=keywords&client_id=demo-law";
    const Reply order = get(base + "&order=position");
    EXPECT_EQ(order.status, 400);
    for (const char* field : {"created_at", "updated_at", "id", "fetched_at", "tracked_at",
                              "external_pages", "linking_domains", "appearances", "scored_at"}) {
        EXPECT_NE(order.body["error"].get<std::string>().find(field), std::string::npos) << field;
    }
    const Reply filter = get(base + "&filter_field=keyword&filter_value=x");
    EXPECT_EQ(filter.status, 400);
    for (const char* field : {"id", "status", "source_type", "source_id", "category_id",
                              "published", "lead_grade", "quality_grade", "sentiment"}) {
        EXPECT_NE(filter.body["error"].get<std::string>().find(field), std::string::npos) << field;
    }
    for (const char* limit : {"0", "1001", "abc", "1.5", "-3", ""}) {
        const Reply r = get(base + "&limit=" + limit);
        EXPECT_EQ(r.status, 400) << limit;
        EXPECT_NE(r.body["error"].get<std::string>().find("1000"), std::string::npos);
    }
    EXPECT_EQ(get(base + "&limit=1000").status, 200);
    EXPECT_EQ(get(base + "&limit=1").status, 200);
    for (const char* offset : {"-1", "x", "2.0"})
        EXPECT_EQ(get(base + "&offset=" + offset).status, 400) << offset;
    const Reply direction = get(base + "&direction=up");
    EXPECT_EQ(direction.status, 400);
    EXPECT_NE(direction.body["error"].get<std::string>().find("asc"), std::string::npos);
    const Reply lonely = get(base + "&filter_field=status");
    EXPECT_EQ(lonely.status, 400);
    EXPECT_NE(lonely.body["error"].get<std::string>().find("filter_value"), std::string::npos);

    const Reply no_client = get("resource=keywords");
    EXPECT_EQ(no_client.status, 400);
    EXPECT_NE(no_client.body["error"].get<std::string>().find("client_id"), std::string::npos);
    const Reply unknown_resource = get("resource=rankings&client_id=demo-law");
    EXPECT_EQ(unknown_resource.status, 400);
    for (const auto& resource : kSpecResources) {
        EXPECT_NE(unknown_resource.body["error"].get<std::string>().find(resource),
                  std::string::npos)
            << resource;
    }
    const Reply unknown_client = get("resource=keywords&client_id=demo-nobody");
    EXPECT_EQ(unknown_client.status, 404);
    EXPECT_NE(unknown_client.body["error"].get<std::string>().find("unknown client_id"),
              std::string::npos);
}

TEST_F(SampleGateway, FiltersMatchExactlyAndCombineWithOrder) {
    const auto expected = [&] {
        std::size_t n = 0;
        for (const auto& row : gateway_->rows("seo_tasks", "demo-plumbing"))
            n += row["status"] == "pending";
        return n;
    }();
    ASSERT_GT(expected, 0u);
    const Reply r =
        get("resource=seo_tasks&client_id=demo-plumbing&filter_field=status&filter_value=pending"
            "&order=created_at&direction=desc");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body["pagination"]["total"].get<std::size_t>(), expected);
    EXPECT_EQ(r.body["data"].size(), expected);
    std::vector<std::string> created;
    for (const auto& row : r.body["data"]) {
        EXPECT_EQ(row["status"], "pending");
        created.push_back(row["created_at"].get<std::string>());
    }
    EXPECT_TRUE(std::is_sorted(created.rbegin(), created.rend()));

    const auto published = get(
        "resource=blogs&client_id=demo-law&filter_field=published&filter_value=true&limit=1000");
    ASSERT_FALSE(published.body["data"].empty());
    for (const auto& row : published.body["data"]) EXPECT_EQ(row["published"], true);
    const auto drafts = get(
        "resource=blogs&client_id=demo-law&filter_field=published&filter_value=false&limit=1000");
    EXPECT_EQ(published.body["data"].size() + drafts.body["data"].size(), 12u);
    const Reply grade_a =
        get("resource=call_scores&client_id=demo-law&filter_field=lead_grade&filter_value=A");
    ASSERT_FALSE(grade_a.body["data"].empty());
    for (const auto& row : grade_a.body["data"]) {
        EXPECT_EQ(row["lead_grade"], "A");
    }
    EXPECT_TRUE(
        get("resource=seo_tasks&client_id=demo-plumbing&filter_field=status&filter_value=Pending")
            .body["data"]
            .empty());
}

TEST_F(SampleGateway, MissingRequiredFieldsAnswer400NamingThem) {
    for (const auto& [action, required] : kSpecActions) {
        for (const auto& field : required) {
            json fields = kValidFields.at(action);
            fields.erase(field);
            const Reply r = act(action, "demo-law", fields);
            EXPECT_EQ(r.status, 400) << action << " without " << field;
            const auto error = r.body.value("error", "");
            EXPECT_NE(error.find(field), std::string::npos) << error;
            for (const auto& all : required) EXPECT_NE(error.find(all), std::string::npos) << error;
        }
    }
    const Reply unknown = act("launch_rocket", "demo-law");
    EXPECT_EQ(unknown.status, 400);
    for (const auto& [action, required] : kSpecActions) {
        EXPECT_NE(unknown.body["error"].get<std::string>().find(action), std::string::npos)
            << action;
    }
    EXPECT_EQ(post({{"action", "seo_audit"}, {"url", "https://x.example"}}).status,
              400);  // no client_id
    EXPECT_EQ(reply_of(client_->Post("/api", "{not json", "application/json")).status, 400);
    EXPECT_EQ(act("seo_audit", "demo-nobody", {{"url", "https://x.example"}}).status, 404);
}

// Each action writes a row that actions.hpp's verification read finds by its match fields.
TEST_F(SampleGateway, EveryActionCreatesTheRecordItsSpecMatchesOn) {
    const std::string since = iso_now_minus(std::chrono::seconds(5));
    for (const auto& spec : agency::gateway::kActionSpecs) {
        // A state check reads the row it acts on (dedicated tests); the action's other entry
        // acts here.
        if (spec.resend == agency::gateway::ResendRule::verify_state) continue;
        const std::string action(spec.action);
        SCOPED_TRACE(action);
        const json fields = kValidFields.at(action);
        const Reply r = act(action, "demo-law", fields);
        ASSERT_EQ(r.status, 200) << r.raw;
        EXPECT_EQ(r.body["action"], action);
        EXPECT_EQ(r.body["client_id"], "demo-law");
        EXPECT_EQ(r.body["status"], "success");
        EXPECT_EQ(r.body["status_code"], 200);
        ASSERT_TRUE(r.body["data"]["id"].is_string()) << r.raw;

        if (spec.match[0].row_field.empty()) continue;  // checked in dedicated tests
        std::string query =
            "resource=" + std::string(spec.resource) + "&client_id=demo-law&limit=5";
        if (!spec.order.empty()) query += "&order=" + std::string(spec.order) + "&direction=desc";
        bool found = false;
        const Reply newest = get(query);
        for (const auto& row : newest.body["data"]) {
            bool all = true;
            for (const auto& m : spec.match) {
                if (m.row_field.empty()) continue;
                const std::string field(m.row_field);
                const json want = m.body_field.empty() ? json(std::string(m.constant))
                                                       : fields.at(std::string(m.body_field));
                all = all && row.contains(field) && row[field] == want;
            }
            if (!all) continue;
            found = true;
            const std::string time_field(spec.time_field);
            ASSERT_TRUE(row[time_field].is_string()) << row;
            EXPECT_TRUE(is_iso_time(row[time_field].get<std::string>()));
            EXPECT_GE(row[time_field].get<std::string>(), since);
        }
        EXPECT_TRUE(found) << "no matching row among the newest of " << spec.resource;
    }
}

TEST_F(SampleGateway, ActionDataShapes) {
    const auto blog = act("generate_blog", "demo-dental", {{"keyword", "teeth whitening denver"}});
    EXPECT_TRUE(blog.body["data"]["post_title"].is_string());
    const auto audit =
        act("seo_audit", "demo-dental", {{"url", "https://brightsmiledental.example/"}});
    for (const char* field : {"id", "score", "issues_found", "url"})
        EXPECT_TRUE(audit.body["data"].contains(field)) << field;
    EXPECT_EQ(audit.body["data"]["url"], "https://brightsmiledental.example/");

    const auto outreach = act("generate_outreach_email", "demo-dental",
                              {{"prospectUrl", "https://www.denverdaily.example/a?b=c"}});
    EXPECT_EQ(outreach.body["data"]["email_to"], "editor@denverdaily.example");
    EXPECT_EQ(outreach.body["data"]["status"], "draft");
    EXPECT_EQ(act("generate_outreach_email", "demo-dental", {{"prospectUrl", "not a url"}}).status,
              400);

    // Sending to the drafted address sends that draft rather than adding a row.
    const auto before = gateway_->rows("backlink_outreach", "demo-dental").size();
    const auto sent =
        act("send_prospect_email", "demo-dental",
            {{"to", "editor@denverdaily.example"}, {"subject", "Hi"}, {"html", "<p>x</p>"}});
    EXPECT_EQ(sent.body["data"]["id"], outreach.body["data"]["id"]);
    EXPECT_EQ(sent.body["data"]["status"], "sent");
    EXPECT_EQ(gateway_->rows("backlink_outreach", "demo-dental").size(), before);
    EXPECT_EQ(act("send_prospect_email", "demo-dental",
                  {{"to", "nobody"}, {"subject", "s"}, {"html", "h"}})
                  .status,
              400);

    const auto keywords_before = gateway_->rows("keywords", "demo-dental").size();
    const auto ideas = act("generate_keywords", "demo-dental", {{"seed", "veneers"}});
    ASSERT_EQ(ideas.status, 200);
    const auto suggested =
        get("resource=keywords&client_id=demo-dental&filter_field=status&filter_value=suggested");
    EXPECT_EQ(suggested.body["pagination"]["total"].get<std::size_t>(),
              ideas.body["data"]["keywords"].size());
    EXPECT_EQ(gateway_->rows("keywords", "demo-dental").size(),
              keywords_before + ideas.body["data"]["keywords"].size());

    const auto image =
        act("generate_blog_image", "demo-dental", {{"title", blog.body["data"]["post_title"]}});
    EXPECT_EQ(image.body["data"]["image_url"].get<std::string>().rfind("https://", 0), 0u);
    EXPECT_EQ(image.body["data"]["post_id"], blog.body["data"]["id"]);

    const auto grid =
        act("run_grid_search", "demo-dental", {{"keyword", "dentist"}, {"lat", "91"}, {"lng", 0}});
    EXPECT_EQ(grid.status, 400);
    const auto score = act("score_call", "demo-dental", {{"transcript", "Sorry, wrong number."}});
    EXPECT_EQ(score.body["data"]["lead_grade"], "D");
}

TEST_F(SampleGateway, SeoAuditAndFetchBacklinksCreateNoDuplicates) {
    const json url = {{"url", "https://acmeplumbing.example/new-page"}};
    const auto reports = gateway_->rows("seo_reports", "demo-plumbing").size();
    const auto first = act("seo_audit", "demo-plumbing", url);
    const auto second = act("seo_audit", "demo-plumbing", url);
    ASSERT_EQ(first.status, 200);
    EXPECT_EQ(first.body["data"]["id"], second.body["data"]["id"]);
    EXPECT_EQ(first.body["data"]["score"], second.body["data"]["score"]);
    EXPECT_EQ(gateway_->rows("seo_reports", "demo-plumbing").size(), reports + 1);
    // An audit of a URL that already has a report refreshes it.
    act("seo_audit", "demo-plumbing", {{"url", "https://acmeplumbing.example/contact"}});
    EXPECT_EQ(gateway_->rows("seo_reports", "demo-plumbing").size(), reports + 1);

    const std::string since = iso_now_minus(std::chrono::seconds(5));
    const auto backlinks = gateway_->rows("backlinks", "demo-plumbing");
    ASSERT_EQ(act("fetch_backlinks", "demo-plumbing").status, 200);
    ASSERT_EQ(act("fetch_backlinks", "demo-plumbing").status, 200);
    const auto after = gateway_->rows("backlinks", "demo-plumbing");
    ASSERT_EQ(after.size(), backlinks.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
        EXPECT_EQ(after[i]["id"], backlinks[i]["id"]);
        EXPECT_GE(after[i]["fetched_at"].get<std::string>(), since);
        json a = after[i];
        json b = backlinks[i];
        a.erase("fetched_at");
        b.erase("fetched_at");
        EXPECT_EQ(a, b);
    }
}

TEST_F(SampleGateway, AutoDeployPublishesGeneratedBlogs) {
    const auto auto_blog =
        act("generate_blog", "demo-plumbing", {{"keyword", "tankless water heater"}});
    EXPECT_EQ(auto_blog.body["data"]["status"], "published");
    EXPECT_EQ(auto_blog.body["data"]["published"], true);
    EXPECT_TRUE(auto_blog.body["data"]["deployed_at"].is_string());
    const auto draft = act("generate_blog", "demo-dental", {{"keyword", "veneers"}});
    EXPECT_EQ(draft.body["data"]["status"], "draft");
    EXPECT_EQ(draft.body["data"]["published"], false);

    gateway_->set_auto_deploy("demo-dental", true);
    EXPECT_EQ(act("generate_blog", "demo-dental", {{"keyword", "veneers"}}).body["data"]["status"],
              "published");
    EXPECT_EQ(get("resource=clients&filter_field=id&filter_value=demo-dental")
                  .body["data"][0]["auto_deploy"],
              true);
    gateway_->set_auto_deploy("demo-plumbing", false);
    EXPECT_EQ(act("generate_blog", "demo-plumbing", {{"keyword", "x"}}).body["data"]["status"],
              "draft");
}

TEST_F(SampleGateway, DeployBlogPublishesTheNamedDraft) {
    const auto draft = act("generate_blog", "demo-law", {{"keyword", "wills and trusts"}});
    const std::string id = draft.body["data"]["id"];
    const auto deployed = act("deploy_blog", "demo-law", {{"post_id", id}});
    ASSERT_EQ(deployed.status, 200);
    const auto row =
        get("resource=blogs&client_id=demo-law&filter_field=id&filter_value=" + id).body["data"][0];
    EXPECT_EQ(row["status"], "published");
    EXPECT_EQ(row["published"], true);
    EXPECT_TRUE(row["deployed_at"].is_string());
    EXPECT_EQ(row["deployed_at"], row["updated_at"]);

    const auto unknown = act("deploy_blog", "demo-law", {{"post_id", "post-law-999999"}});
    EXPECT_EQ(unknown.status, 404);
    EXPECT_NE(unknown.body["error"].get<std::string>().find("post-law-999999"), std::string::npos);
    const auto widget = act("deploy_blog", "demo-law");
    EXPECT_EQ(widget.body["data"]["widget"], "deployed");
}

TEST_F(SampleGateway, KeyedModeEnforcesKeysScopesAndLinks) {
    gateway_->set_keyed(true);
    gateway_->add_key({"k-full", "agency-a", {"read", "write"}, false});
    gateway_->add_key({"k-read", "agency-a", {"read"}, false});
    gateway_->add_key({"k-old", "agency-a", {"read", "write"}, true});
    gateway_->link_client("demo-plumbing", "agency-a");
    gateway_->link_client("demo-law", "agency-b");
    const httplib::Headers full{{"Authorization", "Bearer k-full"}};
    const std::string read = "resource=keywords&client_id=demo-plumbing";

    const Reply missing = get(read);
    const Reply invalid = get(read, {{"Authorization", "Bearer nope"}});
    const Reply expired = get(read, {{"Authorization", "Bearer k-old"}});
    const Reply malformed = get(read, {{"Authorization", "k-full"}});
    for (const auto* r : {&missing, &invalid, &expired, &malformed}) {
        EXPECT_EQ(r->status, 401);
        EXPECT_TRUE(r->body["error"].is_string());
    }
    EXPECT_EQ((std::set<std::string>{missing.body["error"].get<std::string>(),
                                     invalid.body["error"].get<std::string>(),
                                     expired.body["error"].get<std::string>()})
                  .size(),
              3u);
    EXPECT_NE(expired.body["error"].get<std::string>().find("expired"), std::string::npos);

    EXPECT_EQ(get(read, full).status, 200);
    EXPECT_EQ(get(read, {{"Authorization", "Bearer k-read"}}).status, 200);
    const json body{{"action", "score_call"}, {"client_id", "demo-plumbing"}, {"transcript", "hi"}};
    const Reply no_write = post(body, {{"Authorization", "Bearer k-read"}});
    EXPECT_EQ(no_write.status, 403);
    EXPECT_NE(no_write.body["error"].get<std::string>().find("write"), std::string::npos);
    EXPECT_EQ(post(body, full).status, 200);
    EXPECT_EQ(post(body).status, 401);

    const Reply unlinked = get("resource=keywords&client_id=demo-law", full);
    EXPECT_EQ(unlinked.status, 403);
    EXPECT_EQ(
        post({{"action", "score_call"}, {"client_id", "demo-law"}, {"transcript", "hi"}}, full)
            .status,
        403);
    const Reply clients = get("resource=clients", full);
    ASSERT_EQ(clients.body["data"].size(), 1u);
    EXPECT_EQ(clients.body["data"][0]["id"], "demo-plumbing");
    EXPECT_EQ(clients.body["pagination"]["total"], 1);

    gateway_->set_keyed(false);
    EXPECT_EQ(get("resource=clients", {{"Authorization", "Bearer whatever"}}).body["data"].size(),
              3u);
}

TEST_F(SampleGateway, OtherMethodsAnswer405) {
    for (const auto& res : {client_->Put("/api", "{}", "application/json"), client_->Delete("/api"),
                            client_->Patch("/api", "{}", "application/json")}) {
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 405);
        EXPECT_TRUE(json::parse(res->body)["error"].is_string());
    }
    EXPECT_EQ(client_->Options("/api")->status, 405);
    const auto unknown = client_->Get("/elsewhere");
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404);
    EXPECT_TRUE(json::parse(unknown->body)["error"].is_string());
}

TEST_F(SampleGateway, FaultsFailBeforeAndAfterTheWork) {
    const auto blogs = gateway_->rows("blogs", "demo-law").size();
    gateway_->inject({"generate_blog", FaultMode::fail_before});
    const Reply before = act("generate_blog", "demo-law", {{"keyword", "a"}});
    EXPECT_EQ(before.status, 500);
    EXPECT_TRUE(before.body["error"].is_string());
    EXPECT_EQ(gateway_->rows("blogs", "demo-law").size(), blogs);

    gateway_->inject({"generate_blog", FaultMode::fail_after});
    EXPECT_EQ(act("generate_blog", "demo-law", {{"keyword", "b"}}).status, 500);
    EXPECT_EQ(gateway_->rows("blogs", "demo-law").size(), blogs + 1);

    Fault status_error{"generate_blog", FaultMode::status_error};
    status_error.status_code = 503;
    gateway_->inject(status_error);
    const Reply soft = act("generate_blog", "demo-law", {{"keyword", "c"}});
    EXPECT_EQ(soft.status, 200);
    EXPECT_EQ(soft.body["status"], "error");
    EXPECT_EQ(soft.body["status_code"], 503);
    EXPECT_TRUE(soft.body["data"]["error"].is_string());
    EXPECT_EQ(gateway_->rows("blogs", "demo-law").size(), blogs + 1);

    // Faults are spent: the next request is normal.
    EXPECT_EQ(act("generate_blog", "demo-law", {{"keyword", "d"}}).body["status"], "success");
}

TEST_F(SampleGateway, FaultsRateLimitSlowAndTargeting) {
    Fault limit{"keywords", FaultMode::rate_limit};
    limit.retry_after_s = 3;
    limit.count = 2;
    gateway_->inject(limit);
    EXPECT_EQ(get("resource=blogs&client_id=demo-law").status, 200);  // other target untouched
    for (int i = 0; i < 2; ++i) {
        const Reply r = get("resource=keywords&client_id=demo-law");
        EXPECT_EQ(r.status, 429);
        const auto retry = r.headers.find("Retry-After");
        ASSERT_NE(retry, r.headers.end());
        EXPECT_EQ(retry->second, "3");
        EXPECT_TRUE(r.body["error"].is_string());
    }
    EXPECT_EQ(get("resource=keywords&client_id=demo-law").status, 200);

    Fault slow{"score_call", FaultMode::slow};
    slow.delay_ms = 150;
    gateway_->inject(slow);
    const auto scores = gateway_->rows("call_scores", "demo-law").size();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(act("score_call", "demo-law", {{"transcript", "book me"}}).status, 200);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));
    EXPECT_EQ(gateway_->rows("call_scores", "demo-law").size(), scores + 1);

    gateway_->inject({"*", FaultMode::fail_before});
    EXPECT_EQ(get("").status, 500);  // "*" hits discovery too
    EXPECT_EQ(get("").status, 200);
    gateway_->inject({"", FaultMode::fail_before});
    EXPECT_EQ(get("resource=keywords&client_id=demo-law").status, 200);  // "" is discovery only
    EXPECT_EQ(get("").status, 500);

    gateway_->inject({"blogs", FaultMode::fail_before, 5});
    gateway_->clear_faults();
    EXPECT_EQ(get("resource=blogs&client_id=demo-law").status, 200);
}

TEST_F(SampleGateway, DropCutsTheConnectionAfterTheActionRan) {
    const auto tasks = gateway_->rows("seo_tasks", "demo-law").size();
    gateway_->inject({"index_url", FaultMode::drop});
    json body{{"action", "index_url"},
              {"client_id", "demo-law"},
              {"url", "https://summitlawgroup.example/x"}};
    const auto res = client_->Post("/api", body.dump(), "application/json");
    EXPECT_FALSE(res);
    EXPECT_EQ(gateway_->rows("seo_tasks", "demo-law").size(), tasks + 1);
    const auto log = gateway_->request_log();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().status, 0);
    EXPECT_EQ(log.back().fault, "drop");
    // The server keeps serving after a dropped connection.
    EXPECT_EQ(get("resource=seo_tasks&client_id=demo-law").status, 200);

    gateway_->inject({"keywords", FaultMode::drop});
    EXPECT_FALSE(client_->Get("/api?resource=keywords&client_id=demo-law"));
}

TEST_F(SampleGateway, ControlPathInjectsFaultsAndExposesTheLog) {
    httplib::Client control("127.0.0.1", port_);
    auto res = control.Post(
        "/_control/faults",
        json{{"target", "generate_gbp_post"}, {"mode", "status_error"}, {"status_code", 502}}
            .dump(),
        "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    const Reply faulted = act("generate_gbp_post", "demo-law", {{"topic", "x"}});
    EXPECT_EQ(faulted.body["status"], "error");
    EXPECT_EQ(faulted.body["status_code"], 502);

    res = control.Post("/_control/faults",
                       json{{"target", "blogs"}, {"mode", "fail_before"}, {"count", 3}}.dump(),
                       "application/json");
    ASSERT_EQ(res->status, 200);
    ASSERT_EQ(control.Delete("/_control/faults")->status, 200);
    EXPECT_EQ(get("resource=blogs&client_id=demo-law").status, 200);
    EXPECT_EQ(
        control.Post("/_control/faults", R"({"target":"x","mode":"explode"})", "application/json")
            ->status,
        400);

    res = control.Get("/_control/requests");
    ASSERT_TRUE(res);
    const json log = json::parse(res->body);
    ASSERT_TRUE(log.is_array());
    ASSERT_EQ(log.size(), 2u);  // control requests are not logged
    EXPECT_EQ(log[0]["method"], "POST");
    EXPECT_EQ(log[0]["target"], "generate_gbp_post");
    EXPECT_EQ(log[0]["fault"], "status_error");
    EXPECT_EQ(log[1]["target"], "blogs");
    EXPECT_EQ(log[1]["status"], 200);
    EXPECT_EQ(control.Delete("/_control/requests")->status, 200);
    EXPECT_TRUE(gateway_->request_log().empty());
}

TEST_F(SampleGateway, ControlPathRejectsNonLoopbackCallers) {
    // Needs a non-loopback local IPv4 address to call from.
    std::string address;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
        for (auto* it = list; it && address.empty(); it = it->ifa_next) {
            if (!it->ifa_addr || it->ifa_addr->sa_family != AF_INET) continue;
            char text[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr, text,
                      sizeof text);
            if (std::string(text).rfind("127.", 0) != 0) address = text;
        }
        freeifaddrs(list);
    }
    if (address.empty()) GTEST_SKIP() << "no non-loopback IPv4 interface";
    Server open(gateway_);
    const int port = open.start("0.0.0.0", 0);
    httplib::Client remote(address, port);
    auto res = remote.Get("/_control/requests");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403);
    EXPECT_EQ(remote.Get("/api")->status, 200);  // the gateway itself is not restricted
}

TEST_F(SampleGateway, RequestLogRecordsEveryRequest) {
    get("resource=keywords&client_id=demo-law&limit=5");
    act("score_call", "demo-law", {{"transcript", "hello"}});
    get("resource=nope&client_id=demo-law");
    get("");
    const auto log = gateway_->request_log();
    ASSERT_EQ(log.size(), 4u);
    EXPECT_EQ(log[0].method, "GET");
    EXPECT_EQ(log[0].target, "keywords");
    EXPECT_EQ(log[0].client_id, "demo-law");
    EXPECT_EQ(log[0].detail, "resource=keywords&client_id=demo-law&limit=5");
    EXPECT_EQ(log[0].status, 200);
    EXPECT_EQ(log[0].fault, "");
    EXPECT_EQ(log[1].method, "POST");
    EXPECT_EQ(log[1].target, "score_call");
    EXPECT_NE(log[1].detail.find("\"transcript\""), std::string::npos);
    EXPECT_EQ(log[2].status, 400);
    EXPECT_EQ(log[3].target, "");
    EXPECT_LE(std::chrono::system_clock::now() - log[0].at, std::chrono::seconds(10));
    EXPECT_EQ(gateway_->count_requests("GET", "keywords"), 1u);
    EXPECT_EQ(gateway_->count_requests("POST", "score_call"), 1u);
    EXPECT_EQ(gateway_->count_requests("POST", "keywords"), 0u);
    gateway_->clear_log();
    EXPECT_TRUE(gateway_->request_log().empty());
}

TEST_F(SampleGateway, SameSeedGivesIdenticalData) {
    Gateway a;
    Gateway b;
    Options other;
    other.seed = 7;
    Gateway c(other);
    for (const auto& client : kClients) {
        EXPECT_EQ(a.rows("keywords", client), b.rows("keywords", client)) << client;
        EXPECT_EQ(a.rows("backlinks", client), b.rows("backlinks", client)) << client;
        EXPECT_NE(a.rows("keywords", client), c.rows("keywords", client)) << client;
    }
    // And over HTTP: byte-identical pages from two servers.
    const std::string page =
        "/api?resource=keywords&client_id=demo-law&limit=1000&offset=500&order=tracked_at";
    Server other_server(std::make_shared<Gateway>());
    httplib::Client other_client("127.0.0.1", other_server.start());
    const auto mine = client_->Get(page);
    const auto theirs = other_client.Get(page);
    ASSERT_TRUE(mine && theirs);
    EXPECT_EQ(mine->body, theirs->body);
    // A fixed golden value guards against platform-dependent generation.
    EXPECT_EQ(a.rows("keywords", "demo-plumbing")[0]["keyword"], "plumber austin");
}

TEST_F(SampleGateway, BulkClientServesLargePages) {
    Options options;
    options.bulk_keyword_rows = 100'000;
    start(std::make_shared<Gateway>(options));
    const Reply r =
        get("resource=keywords&client_id=demo-bulk&limit=1000&offset=50000&order=tracked_at");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body["pagination"]["total"], 100000);
    EXPECT_EQ(r.body["data"].size(), 1000u);
    EXPECT_TRUE(r.body["pagination"]["has_more"].get<bool>());
    const Reply filtered = get(
        "resource=keywords&client_id=demo-bulk&limit=1000&filter_field=status&filter_value=active");
    EXPECT_EQ(filtered.body["data"].size(), 1000u);
    // 500 keywords x 200 dates: the newest 500 rows are one date, one row per keyword.
    const Reply newest = get("resource=keywords&client_id=demo-bulk&limit=500&order=tracked_at");
    std::set<std::string> keywords;
    std::set<std::string> dates;
    for (const auto& row : newest.body["data"]) {
        keywords.insert(row["keyword"].get<std::string>());
        dates.insert(row["tracked_at"].get<std::string>());
    }
    EXPECT_EQ(keywords.size(), 500u);
    EXPECT_EQ(dates.size(), 1u);
    const Reply clients = get("resource=clients");
    EXPECT_EQ(clients.body["data"].size(), 4u);
}

TEST_F(SampleGateway, ResponsesAreNeverCompressed) {
    const auto res = client_->Get("/api?resource=keywords&client_id=demo-plumbing&limit=1000",
                                  {{"Accept-Encoding", "br, gzip, deflate"}});
    ASSERT_TRUE(res);
    EXPECT_FALSE(res->has_header("Content-Encoding"));
    EXPECT_EQ(json::parse(res->body)["data"].size(), 1000u);
}

TEST_F(SampleGateway, ConcurrentReadsAndActions) {
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            httplib::Client c("127.0.0.1", port_);
            for (int i = 0; i < 20; ++i) {
                httplib::Result res = t % 2 ? c.Post("/api",
                                                     json{{"action", "generate_blog"},
                                                          {"client_id", "demo-dental"},
                                                          {"keyword", "k"}}
                                                         .dump(),
                                                     "application/json")
                                            : c.Get(
                                                  "/api?resource=blogs&client_id=demo-dental&order="
                                                  "created_at&limit=50");
                if (!res || res->status != 200) ++failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(gateway_->rows("blogs", "demo-dental").size(), 12u + 60u);
    std::set<std::string> ids;
    for (const auto& row : gateway_->rows("blogs", "demo-dental"))
        ids.insert(row["id"].get<std::string>());
    EXPECT_EQ(ids.size(), 72u);
}

TEST_F(SampleGateway, ServerReportsItsBaseUrlAndRejectsABusyPort) {
    EXPECT_EQ(server_->base_url(), "http://127.0.0.1:" + std::to_string(port_) + "/api");
    Server second(std::make_shared<Gateway>());
    EXPECT_THROW(second.start("127.0.0.1", port_), std::runtime_error);
}

}  // namespace
