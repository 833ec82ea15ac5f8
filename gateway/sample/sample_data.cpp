// Deterministic sample data: every resource for every sample client, derived from
// Options::seed with std::mt19937_64 and plain arithmetic, so two runs (on any machine) with one
// seed serve identical rows. Dates end at kDataEnd; rows of a resource are stored oldest first.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <set>

#include "gateway/sample/sample_internal.hpp"

namespace agency::sample::detail {

namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// Options::agency_clients: more clients made from the sample's three in turn, each tracked
// weekly (50 keywords x 50 dates).
void add_agency_clients(std::vector<ClientProfile>& out, std::size_t count, int dates) {
    const std::vector<ClientProfile> templates(out.begin(), out.begin() + 3);
    for (std::size_t i = 1; i <= count; ++i) {
        ClientProfile c = templates[(i - 1) % templates.size()];
        char digits[8];
        std::snprintf(digits, sizeof digits, "%02zu", i);
        c.id = std::string("agency-") + digits;
        c.short_name = std::string("agency") + digits;
        c.name = c.name + " " + c.nearby_cities[(i - 1) % c.nearby_cities.size()] + " " + digits;
        c.host = std::string("agency") + digits + ".example";
        c.keyword_count = 50;
        c.tracking_every = 7;
        c.tracking_dates = dates;
        out.push_back(std::move(c));
    }
}

std::vector<ClientProfile> sample_profiles(std::size_t bulk_rows, std::size_t agency_clients,
                                          int agency_tracking_dates) {
    std::vector<ClientProfile> out;
    ClientProfile plumbing;
    plumbing.id = "demo-plumbing";
    plumbing.short_name = "plumbing";
    plumbing.name = "Acme Plumbing";
    plumbing.industry = "plumbing";
    plumbing.host = "acmeplumbing.example";
    plumbing.city = "Austin";
    plumbing.state = "TX";
    plumbing.zip = "78701";
    plumbing.lat = 30.2672;
    plumbing.lng = -97.7431;
    plumbing.phone = "+1 (512) 555-0142";
    plumbing.deployment_target = "wordpress";
    plumbing.gbp_category = "Plumber";
    plumbing.area_code = "512";
    plumbing.location_count = 2;
    plumbing.services = {"plumber", "water heater repair", "drain cleaning", "leak detection",
                         "sewer line repair"};
    plumbing.competitor_nouns = {"Plumbing Co", "Rooter", "Pipe Pros", "Plumbing & Drain"};
    plumbing.nearby_cities = {"Round Rock", "Cedar Park", "Pflugerville",
                              "Georgetown", "Kyle",       "Buda"};
    plumbing.auto_deploy = true;
    out.push_back(plumbing);

    ClientProfile dental;
    dental.id = "demo-dental";
    dental.short_name = "dental";
    dental.name = "Bright Smile Dental";
    dental.industry = "dental";
    dental.host = "brightsmiledental.example";
    dental.city = "Denver";
    dental.state = "CO";
    dental.zip = "80202";
    dental.lat = 39.7392;
    dental.lng = -104.9903;
    dental.phone = "+1 (303) 555-0187";
    dental.deployment_target = "widget";
    dental.gbp_category = "Dentist";
    dental.area_code = "303";
    dental.location_count = 2;
    dental.services = {"dentist", "teeth whitening", "dental implants", "emergency dentist",
                       "invisalign"};
    dental.competitor_nouns = {"Family Dental", "Dental Studio", "Smiles", "Dental Care"};
    dental.nearby_cities = {"Aurora",    "Lakewood", "Littleton",
                            "Englewood", "Arvada",   "Westminster"};
    out.push_back(dental);

    ClientProfile law;
    law.id = "demo-law";
    law.short_name = "law";
    law.name = "Summit Law Group";
    law.industry = "legal";
    law.host = "summitlawgroup.example";
    law.city = "Seattle";
    law.state = "WA";
    law.zip = "98101";
    law.lat = 47.6062;
    law.lng = -122.3321;
    law.phone = "+1 (206) 555-0163";
    law.deployment_target = "webflow";
    law.gbp_category = "Personal injury attorney";
    law.area_code = "206";
    law.services = {"personal injury lawyer", "car accident attorney", "estate planning attorney",
                    "divorce lawyer", "workers compensation lawyer"};
    law.competitor_nouns = {"Law Firm", "Legal Group", "Injury Lawyers", "Law Offices"};
    law.nearby_cities = {"Bellevue", "Tacoma", "Redmond", "Kirkland", "Everett", "Renton"};
    out.push_back(law);

    if (bulk_rows > 0) {
        ClientProfile bulk;
        bulk.id = kBulkClient;
        bulk.short_name = "bulk";
        bulk.name = "Bulk Demo Home Services";
        bulk.industry = "home services";
        bulk.host = "bulkdemo.example";
        bulk.city = "Chicago";
        bulk.state = "IL";
        bulk.zip = "60601";
        bulk.lat = 41.8781;
        bulk.lng = -87.6298;
        bulk.phone = "+1 (312) 555-0119";
        bulk.deployment_target = "widget";
        bulk.gbp_category = "HVAC contractor";
        bulk.area_code = "312";
        bulk.services = {"hvac repair",        "furnace installation", "ac repair",
                         "roof repair",        "roof replacement",     "gutter cleaning",
                         "electrician",        "panel upgrade",        "landscaping",
                         "lawn care",          "pest control",         "termite treatment",
                         "window replacement", "siding repair",        "garage door repair",
                         "handyman",           "house cleaning",       "carpet cleaning",
                         "pressure washing",   "tree removal"};
        bulk.competitor_nouns = {"Home Services", "Heating & Air", "Roofing", "Handyman"};
        bulk.nearby_cities = {"Evanston",
                              "Naperville",
                              "Oak Park",
                              "Skokie",
                              "Schaumburg",
                              "Joliet",
                              "Aurora",
                              "Elgin",
                              "Waukegan",
                              "Cicero",
                              "Arlington Heights",
                              "Bolingbrook",
                              "Palatine",
                              "Orland Park",
                              "Tinley Park",
                              "Oak Lawn",
                              "Berwyn",
                              "Mount Prospect",
                              "Wheaton",
                              "Downers Grove",
                              "Hoffman Estates",
                              "Glenview",
                              "Elmhurst",
                              "Lombard",
                              "Des Plaines"};
        out.push_back(bulk);
    }
    add_agency_clients(out, agency_clients, agency_tracking_dates);
    return out;
}

// A moment `days_ago` days before kDataEnd, during business hours.
Seconds moment(int days_ago, Rng& rng) {
    const int hour = rng.between(8, 18);
    const int minute = rng.between(0, 59);
    const int second = rng.between(0, 59);
    return Seconds{kDataEnd - days{days_ago}} + hours{hour} + minutes{minute} + seconds{second};
}

// A moment between `t` and the end of the sample period.
Seconds later(Seconds t, Rng& rng) {
    const Seconds end = Seconds{kDataEnd} + hours{19};
    if (t >= end) return t;
    const auto span = (end - t).count();
    return t + seconds{static_cast<std::int64_t>(rng.unit() * static_cast<double>(span))};
}

Seconds shifted(Seconds t, std::chrono::seconds by) {
    const Seconds end = Seconds{kDataEnd} + hours{19};
    return std::min(t + by, end);
}

class Generator {
public:
    Generator(Store& store, const ClientProfile& client, std::uint64_t seed)
        : store_(store), c_(client), seed_(seed) {}

    void run(std::size_t bulk_rows) {
        if (c_.keyword_count > 0) return agency_client();
        if (c_.id == kBulkClient) {
            bulk_keywords(bulk_rows);
        } else {
            keywords();
        }
        seo_tasks();
        seo_reports();
        blog_taxonomy();
        blogs();
        geo_articles();
        topical_maps();
        press_releases();
        backlinks();
        domain_metrics();
        backlink_outreach();
        backlink_summaries();
        citations();
        locations();
        gbp_profiles();
        gbp_posts();
        reviews();
        grid_searches();
        competitors();
        llm_reports();
        calls();
        ai_summaries();
        ai_training();
        integrations();
    }

private:
    // Options::agency_clients: the resources an account manager's overview and triage read
    // (rankings, audits, articles, backlinks, citations, locations and reviews); the others
    // stay empty, so that 40 clients are made in a moment.
    void agency_client() {
        keywords();
        seo_reports();
        blog_taxonomy();
        blogs();
        geo_articles();
        backlinks();
        citations();
        locations();
        reviews();
    }

    Rng rng(std::string_view resource) const { return Rng(mix_seed(seed_, c_.id, resource)); }

    // Stores rows oldest first (by created_at) and returns their ids in that order.
    std::vector<std::string> add(const std::string& resource, std::vector<ojson> rows) {
        std::stable_sort(rows.begin(), rows.end(), [](const ojson& a, const ojson& b) {
            return a.value("created_at", std::string()) < b.value("created_at", std::string());
        });
        std::vector<std::string> ids;
        for (const auto& row : rows) {
            ids.push_back(
                append_with_id(store_, resource, c_.id, store_.next_id(resource, c_.id), row));
        }
        return ids;
    }

    std::string page_url(std::string_view path) const { return c_.website() + std::string(path); }
    std::string service_url(const std::string& service) const {
        return page_url("/services/" + slugify(service));
    }

    // A field beyond the spec's keyword row, as real deployments add (the spec's tool
    // descriptions name a keyword's intent).
    static const char* intent_of(std::string_view keyword) {
        if (keyword.find("near me") != std::string_view::npos) return "local";
        if (keyword.find("cost") != std::string_view::npos ||
            keyword.find("affordable") != std::string_view::npos)
            return "commercial";
        return keyword.starts_with("best ") ? "commercial" : "transactional";
    }

    void keyword_row(std::size_t seq, const std::string& keyword, int position,
                     const std::string& url, int volume, int difficulty, const std::string& created,
                     const std::string& tracked, bool paused) {
        char digits[32];
        std::snprintf(digits, sizeof digits, "%06zu", seq);
        const ojson row{{"id", "kw-" + c_.short_name + "-" + digits},
                        {"keyword", keyword},
                        {"position", position},
                        {"url", url},
                        {"search_volume", volume},
                        {"difficulty", difficulty},
                        {"created_at", created},
                        {"tracked_at", tracked},
                        {"status", paused ? "paused" : "active"},
                        {"intent", intent_of(keyword)}};
        store_.table("keywords", c_.id).append(make_row(row));
    }

    struct TrackedKeyword {
        std::string keyword;
        std::string url;
        int volume = 0;
        int difficulty = 0;
        int position = 0;
        std::string created;
        bool paused = false;
    };

    TrackedKeyword tracked_keyword(std::string keyword, std::string url, Days first_date, Rng& r) {
        TrackedKeyword k;
        k.keyword = std::move(keyword);
        k.url = std::move(url);
        k.volume = search_volume(r);
        k.difficulty = r.between(8, 78);
        k.position = r.between(3, 60);
        k.created = iso_date(first_date - days{r.between(0, 120)});
        k.paused = r.chance(0.1);
        return k;
    }

    // Rank histories: one row per keyword per date, stored date by date.
    // `every` days apart: real deployments track weekly as often as daily, so a date between
    // two tracking dates holds no rows.
    void track(std::vector<TrackedKeyword>& keywords, int dates, std::size_t max_rows, Rng& r,
               int every = 1) {
        const Days first = kDataEnd - days{(dates - 1) * every};
        std::size_t seq = 0;
        // Options::keyword_url_switches draws from its own stream: positions stay as without it.
        UrlSwitches switches(store_.options.keyword_url_switches, rng("url-switches"),
                             keywords.size());
        for (int d = 0; d < dates; ++d) {
            const std::string tracked = iso_date(first + days{d * every});
            for (std::size_t i = 0; i < keywords.size(); ++i) {
                auto& k = keywords[i];
                if (seq == max_rows) return;
                if (d > 0) {
                    // A slow random walk, drifting towards better ranks.
                    const int step = r.between(-3, 2);
                    k.position = std::clamp(k.position + step, 1, 100);
                }
                const UrlSwitches::Day day = switches.next(i);
                if (day.alternate_only || day.both) {
                    const std::string other = page_url("/blog/" + slugify(k.keyword) + "-guide");
                    if (day.both)
                        keyword_row(++seq, k.keyword, k.position, k.url, k.volume, k.difficulty,
                                    k.created, tracked, k.paused);
                    if (seq == max_rows) return;
                    keyword_row(++seq, k.keyword, std::min(100, k.position + day.behind), other,
                                k.volume, k.difficulty, k.created, tracked, k.paused);
                    continue;
                }
                keyword_row(++seq, k.keyword, k.position, k.url, k.volume, k.difficulty, k.created,
                            tracked, k.paused);
            }
        }
    }

    // Which page ranks for a keyword on a date, under Options::keyword_url_switches: every third
    // keyword sometimes ranks with a second page instead of its own, and sometimes with both.
    class UrlSwitches {
    public:
        UrlSwitches(bool on, Rng rng, std::size_t keywords)
            : on_(on), rng_(std::move(rng)), alternate_(keywords, false) {}
        struct Day {
            bool alternate_only = false;  // the second page ranks instead
            bool both = false;            // both rank; the second `behind` positions lower
            int behind = 0;
        };
        Day next(std::size_t keyword) {
            if (!on_ || keyword % 3 != 0) return {};
            if (rng_.chance(0.15)) alternate_[keyword] = !alternate_[keyword];
            Day day;
            day.both = rng_.chance(0.2);
            day.alternate_only = !day.both && alternate_[keyword];
            day.behind = day.both ? rng_.between(2, 12) : 0;
            return day;
        }

    private:
        bool on_;
        Rng rng_;
        std::vector<bool> alternate_;
    };

    // Options::agency_clients: keyword_count keywords (services in the nearby cities), tracked
    // every tracking_every days on tracking_dates dates.
    void agency_keywords() {
        auto r = rng("keywords");
        const int dates = c_.tracking_dates, every = c_.tracking_every;
        std::vector<TrackedKeyword> list;
        const std::size_t combos = c_.services.size() * c_.nearby_cities.size();
        for (int i = 0; i < c_.keyword_count; ++i) {
            const auto n = static_cast<std::size_t>(i);
            const auto& service = c_.services[n % c_.services.size()];
            const auto& town = c_.nearby_cities[(n / c_.services.size()) % c_.nearby_cities.size()];
            // Every keyword its own words: past the service-town pairs, "best ..." and "... cost".
            std::string keyword = service + " " + lower(town);
            if (const std::size_t round = n / combos; round == 1)
                keyword = "best " + keyword;
            else if (round >= 2)
                keyword += " cost" + (round == 2 ? std::string() : " " + std::to_string(round));
            list.push_back(tracked_keyword(std::move(keyword), service_url(service),
                                           kDataEnd - days{(dates - 1) * every}, r));
        }
        track(list, dates, std::size_t(-1), r, every);
    }

    void keywords() {
        if (c_.keyword_count > 0) return agency_keywords();
        // Summit Law Group is tracked weekly (26 dates), the others daily (60 dates).
        const int every = c_.id == "demo-law" ? 7 : 1;
        const int kDates = every == 1 ? 60 : 26;
        auto r = rng("keywords");
        const std::string city = lower(c_.city);
        std::vector<TrackedKeyword> list;
        for (const auto& s : c_.services) {
            const std::string url = service_url(s);
            const std::array<std::pair<std::string, std::string>, 5> variants{{
                {s + " " + city, url},
                {s + " near me", url},
                {"best " + s + " " + city, url},
                {s + " cost", page_url("/blog/" + slugify(s) + "-cost-guide")},
                {"affordable " + s, url},
            }};
            for (const auto& [keyword, page] : variants) {
                list.push_back(
                    tracked_keyword(keyword, page, kDataEnd - days{(kDates - 1) * every}, r));
            }
        }
        track(list, kDates, std::size_t(-1), r, every);
    }

    void bulk_keywords(std::size_t rows) {
        auto r = rng("keywords");
        const std::size_t keyword_count = std::min<std::size_t>(500, rows);
        const int dates = static_cast<int>((rows + keyword_count - 1) / keyword_count);
        std::vector<TrackedKeyword> list;
        for (std::size_t i = 0; i < keyword_count; ++i) {
            const auto& service = c_.services[i % c_.services.size()];
            const auto& town = c_.nearby_cities[(i / c_.services.size()) % c_.nearby_cities.size()];
            list.push_back(tracked_keyword(service + " " + lower(town), service_url(service),
                                           kDataEnd - days{dates - 1}, r));
        }
        track(list, dates, rows, r);
    }

    void seo_tasks() {
        struct Template {
            std::string_view title;
            std::string_view task_type;
            std::string_view category_id;
            std::string_view path;  // "{s}": service slug, "{n}": nearby-city slug
        };
        static constexpr std::array<Template, 14> kTemplates{{
            {"Fix missing meta descriptions on service pages", "technical_fix", "seo-cat-technical",
             "/services"},
            {"Add LocalBusiness schema markup", "technical_fix", "seo-cat-technical", "/"},
            {"Compress oversized hero images", "technical_fix", "seo-cat-technical", "/"},
            {"Fix broken internal links", "technical_fix", "seo-cat-technical", "/blog"},
            {"Improve mobile Largest Contentful Paint", "technical_fix", "seo-cat-technical", "/"},
            {"Rewrite title tag for the {S} page", "on_page", "seo-cat-on-page", "/services/{s}"},
            {"Add internal links to the {S} page", "on_page", "seo-cat-on-page", "/services/{s}"},
            {"Add an FAQ section to the {S} page", "content", "seo-cat-content", "/services/{s}"},
            {"Write a {S} cost guide", "content", "seo-cat-content", "/blog"},
            {"Create a location page for {N}", "content", "seo-cat-local", "/locations/{n}"},
            {"Correct business hours on directory listings", "citation", "seo-cat-local",
             "/contact"},
            {"Reply to this week's Google reviews", "review_response", "seo-cat-local", "/"},
            {"Pitch a guest post to a local news site", "link_building", "seo-cat-links", "/"},
            {"Disavow spammy referring domains", "link_building", "seo-cat-links", "/"},
        }};
        auto r = rng("seo_tasks");
        std::vector<ojson> rows;
        for (int i = 0; i < 30; ++i) {
            const auto& t = r.pick(kTemplates);
            const auto& service = r.pick(c_.services);
            const auto& town = r.pick(c_.nearby_cities);
            auto fill = [&](std::string_view pattern) {
                std::string text(pattern);
                for (const auto& [from, to] :
                     std::array<std::pair<std::string_view, std::string>, 4>{
                         {{"{S}", service},
                          {"{s}", slugify(service)},
                          {"{N}", town},
                          {"{n}", slugify(town)}}}) {
                    if (auto at = text.find(from); at != std::string::npos) {
                        text.replace(at, from.size(), to);
                    }
                }
                return text;
            };
            const int status_roll = r.between(1, 100);
            const std::string status = status_roll <= 40   ? "pending"
                                       : status_roll <= 65 ? "in_progress"
                                                           : "completed";
            const int priority_roll = r.between(1, 4);
            const std::string priority = priority_roll == 1   ? "high"
                                         : priority_roll == 4 ? "low"
                                                              : "medium";
            const Seconds created = moment(r.between(1, 180), r);
            const Seconds updated = later(created, r);
            ojson row{{"title", fill(t.title)},
                      {"task_type", t.task_type},
                      {"url", page_url(fill(t.path))},
                      {"status", status},
                      {"priority", priority},
                      {"category_id", t.category_id},
                      {"due_date", iso_date(std::chrono::floor<days>(created) + days{14})},
                      {"created_at", iso_time(created)},
                      {"updated_at", iso_time(updated)}};
            row["completed_at"] = status == "completed" ? ojson(iso_time(updated)) : ojson(nullptr);
            rows.push_back(std::move(row));
        }
        add("seo_tasks", std::move(rows));
    }

    void seo_reports() {
        auto r = rng("seo_reports");
        const std::array<std::string, 6> paths{"/",        "/services", "/about",
                                               "/contact", "/blog",     "/locations"};
        std::vector<ojson> rows;
        for (const auto& path : paths) {
            ojson row = audit_fields(c_, page_url(path), r);
            if (store_.options.counts_only_reports) row.erase("issues");
            const Seconds created = moment(r.between(2, 200), r);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(shifted(created, minutes{r.between(3, 40)}));
            rows.push_back(std::move(row));
        }
        const auto ids = add("seo_reports", std::move(rows));
        // Share links name the report, so they are filled in once ids exist.
        auto& table = store_.table("seo_reports", c_.id);
        for (std::size_t i = 0; i < table.size(); ++i) {
            ojson row = table.parsed(i);
            row["share_url"] = share_url("audits", row["id"].get<std::string>());
            table.replace(i, make_row(row));
        }
        report_ids_ = ids;
    }

    void blog_taxonomy() {
        auto r = rng("blog_taxonomy");
        std::vector<ojson> categories;
        for (std::size_t i = 0; i < 4 && i < c_.services.size(); ++i) {
            const std::string name = title_case(c_.services[i]) + " Tips";
            categories.push_back(
                {{"name", name},
                 {"slug", slugify(name)},
                 {"description", "Advice and guides about " + c_.services[i] + "."},
                 {"created_at", iso_time(moment(400 + static_cast<int>(i), r))}});
        }
        categories.push_back({{"name", "News & Updates"},
                              {"slug", "news-updates"},
                              {"description", "Company news from " + c_.name + "."},
                              {"created_at", iso_time(moment(405, r))}});
        category_ids_ = add("blog_categories", std::move(categories));

        static const std::array<std::pair<std::string_view, std::string_view>, 9> kAuthors{
            {{"Maria Lopez", "Content Lead"},
             {"James Carter", "Staff Writer"},
             {"Priya Shah", "SEO Strategist"},
             {"Daniel Kim", "Owner"},
             {"Emily Johnson", "Staff Writer"},
             {"Marcus Reed", "Editor"},
             {"Hannah Brooks", "Marketing Manager"},
             {"Luis Ortega", "Staff Writer"},
             {"Grace Chen", "Editor"}}};
        std::vector<ojson> authors;
        const std::size_t first = r.next() % kAuthors.size();
        for (std::size_t i = 0; i < 3; ++i) {
            const auto& [name, role] = kAuthors[(first + i * 2) % kAuthors.size()];
            const std::string first_name = lower(name.substr(0, name.find(' ')));
            authors.push_back(
                {{"name", name},
                 {"role", role},
                 {"email", first_name + "@" + c_.host},
                 {"bio",
                  std::string(name) + " writes about " + c_.industry + " for " + c_.name + "."},
                 {"created_at", iso_time(moment(390 - static_cast<int>(i) * 30, r))}});
        }
        author_ids_ = add("blog_authors", std::move(authors));
    }

    void blogs() {
        auto r = rng("blogs");
        static constexpr std::array<std::string_view, 3> kTones{"professional", "friendly",
                                                                "informative"};
        std::vector<ojson> rows;
        for (int i = 0; i < 12; ++i) {
            const auto& service = r.pick(c_.services);
            const std::string keyword = r.chance(0.5) ? service + " " + lower(c_.city) : service;
            const std::string title = blog_title(keyword, r);
            const bool published = r.chance(0.67);
            const Seconds created = moment(r.between(3, 330), r);
            const Seconds deployed = shifted(created, hours{r.between(1, 72)});
            const Seconds updated = published ? deployed : later(created, r);
            const std::string slug = slugify(title);
            const auto& category = r.pick(category_ids_);
            const auto& author = r.pick(author_ids_);
            const int words = r.between(9, 24) * 100;
            const auto& tone = r.pick(kTones);
            const bool has_image = r.chance(0.6);
            ojson row{{"post_title", title},    {"slug", slug},
                      {"keyword", keyword},     {"status", published ? "published" : "draft"},
                      {"published", published}, {"category_id", category},
                      {"author_id", author},    {"word_count", words},
                      {"tone", tone},           {"deployment_target", c_.deployment_target}};
            row["url"] = published ? ojson(page_url("/blog/" + slug)) : ojson(nullptr);
            row["image_url"] =
                has_image ? ojson("https://cdn.sample-gateway.example/images/" + slug + ".png")
                          : ojson(nullptr);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(updated);
            row["deployed_at"] = published ? ojson(iso_time(deployed)) : ojson(nullptr);
            rows.push_back(std::move(row));
        }
        add("blogs", std::move(rows));
    }

    void geo_articles() {
        auto r = rng("geo_articles");
        static constexpr std::array<std::string_view, 3> kTitles{
            "{S} in {C}, {ST}: A Local Guide", "Finding Trusted {S} in {C}, {ST}",
            "{S} Near {C}: What Residents Should Know"};
        std::vector<ojson> rows;
        for (int i = 0; i < 8; ++i) {
            const auto& service = r.pick(c_.services);
            const auto& town =
                c_.nearby_cities[static_cast<std::size_t>(i) % c_.nearby_cities.size()];
            std::string title(r.pick(kTitles));
            title.replace(title.find("{S}"), 3, title_case(service));
            title.replace(title.find("{C}"), 3, town);
            if (auto at = title.find("{ST}"); at != std::string::npos)
                title.replace(at, 4, c_.state);
            const bool published = r.chance(0.6);
            const Seconds created = moment(r.between(3, 240), r);
            const Seconds deployed = shifted(created, hours{r.between(1, 48)});
            const auto& category = r.pick(category_ids_);
            const int words = r.between(8, 16) * 100;
            const std::string slug = slugify(service + " " + town);
            ojson row{{"title", title},
                      {"keyword", service + " " + lower(town)},
                      {"city", town},
                      {"state", c_.state},
                      {"category_id", category},
                      {"status", published ? "published" : "draft"},
                      {"word_count", words},
                      {"deployment_target", c_.deployment_target}};
            row["url"] = published ? ojson(page_url("/areas/" + slug)) : ojson(nullptr);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(published ? deployed : created);
            row["deployed_at"] = published ? ojson(iso_time(deployed)) : ojson(nullptr);
            rows.push_back(std::move(row));
        }
        add("geo_articles", std::move(rows));
    }

    void topical_maps() {
        auto r = rng("topical_maps");
        std::vector<ojson> rows;
        for (std::size_t i = 0; i < 3; ++i) {
            const int depth = r.between(2, 3);
            ojson row = topical_map_fields(c_.services[i], depth, r);
            const Seconds created = moment(r.between(10, 300), r);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(shifted(created, minutes{r.between(2, 30)}));
            rows.push_back(std::move(row));
        }
        add("topical_maps", std::move(rows));
    }

    void press_releases() {
        auto r = rng("press_releases");
        const std::array<std::string, 5> headlines{
            c_.name + " Expands " + title_case(c_.services[1]) + " Services to " +
                c_.nearby_cities[0],
            c_.name + " Named a Top " + title_case(c_.industry) + " Provider in " + c_.city,
            c_.name + " Launches 24/7 " + title_case(c_.services[0]) + " Hotline",
            c_.name + " Celebrates 10 Years Serving " + c_.city,
            c_.name + " Partners With Local Food Bank for Community Day"};
        std::vector<ojson> rows;
        for (std::size_t i = 0; i < 4; ++i) {
            const int roll = r.between(1, 4);
            const std::string status = roll == 1   ? "draft"
                                       : roll == 2 ? "published"
                                                   : "distributed";
            const Seconds created = moment(r.between(5, 360), r);
            const Seconds published_at = shifted(created, hours{r.between(4, 96)});
            const ojson points =
                ojson::array({"Serving " + c_.city + " and nearby communities",
                              "Licensed and insured team", "Call " + c_.phone + " for details"});
            ojson row{{"headline", headlines[i]},
                      {"summary", headlines[i] + ". " + c_.name + " announced the news today in " +
                                      c_.city + ", " + c_.state + "."},
                      {"body_points", points},
                      {"status", status},
                      {"created_at", iso_time(created)},
                      {"updated_at", iso_time(status == "draft" ? created : published_at)}};
            row["published_at"] =
                status == "draft" ? ojson(nullptr) : ojson(iso_time(published_at));
            rows.push_back(std::move(row));
        }
        add("press_releases", std::move(rows));
    }

    void backlinks() {
        struct Domain {
            std::string name;
            std::string source_type;
            int authority = 0;
            std::string id;
        };
        const std::string city = slugify(c_.city);
        const std::string trade = slugify(c_.industry);
        const std::string state = lower(c_.state);
        const std::array<std::pair<std::string, std::string>, 20> pool{{
            {city + "chronicle.example", "news"},
            {city + "businessjournal.example", "news"},
            {"localguide" + state + ".example", "directory"},
            {"yellowpagesdirectory.example", "directory"},
            {"homeservicesreview.example", "directory"},
            {trade + "forum.example", "forum"},
            {"neighborhoodtalk.example", "forum"},
            {city + "chamber.example", "association"},
            {trade + "association.example", "association"},
            {"diyhomeblog.example", "blog"},
            {"smallbizspotlight.example", "blog"},
            {city + "parents.example", "blog"},
            {"familyliving.example", "blog"},
            {"communitynews" + state + ".example", "news"},
            {"socialbookmarks.example", "social"},
            {"pinboardideas.example", "social"},
            {"bestof" + city + ".example", "directory"},
            {trade + "tipsdaily.example", "blog"},
            {"citywideevents.example", "news"},
            {"localsponsors.example", "association"},
        }};
        auto r = rng("backlinks");
        std::vector<Domain> domains;
        for (std::size_t i = 0; i < pool.size(); ++i) {
            char digits[24];  // any size_t fits (-Wformat-truncation in the asan build)
            std::snprintf(digits, sizeof digits, "%03zu", i + 1);
            domains.push_back({pool[i].first, pool[i].second, r.between(8, 72),
                               "rd-" + c_.short_name + "-" + digits});
        }
        const std::string brand = c_.name;
        const std::array<std::pair<std::string, std::string>, 9> anchors{{
            {brand, "branded"},
            {brand + " " + c_.city, "branded"},
            {c_.host, "naked_url"},
            {c_.services[0] + " " + lower(c_.city), "exact"},
            {c_.services[1], "exact"},
            {c_.services[2] + " services", "partial"},
            {"trusted " + c_.services[0], "partial"},
            {"click here", "generic"},
            {"website", "generic"},
        }};
        const std::array<std::string, 6> targets{page_url("/"),
                                                 service_url(c_.services[0]),
                                                 service_url(c_.services[1]),
                                                 service_url(c_.services[2]),
                                                 page_url("/contact"),
                                                 page_url("/blog")};
        const std::string fetched = iso_time(Seconds{kDataEnd} + hours{6});

        std::vector<ojson> rows;
        for (int i = 0; i < 60; ++i) {
            // Earlier domains in the pool link more often.
            const std::size_t d = std::min(r.next() % pool.size(), r.next() % pool.size());
            const Domain& domain = domains[d];
            const auto& [anchor, anchor_type] = r.pick(anchors);
            const auto& target = r.pick(targets);
            const Seconds first_seen = moment(r.between(20, 700), r);
            const Seconds last_seen = later(first_seen, r);
            const int page_authority =
                r.between(std::max(1, domain.authority / 3), domain.authority);
            const int external_pages = r.between(1, 400);
            const int linking_domains = r.between(0, 250);
            const bool nofollow = r.chance(0.25);
            const bool lost = r.chance(0.08);
            const int path_slug = r.between(100, 999);
            rows.push_back(
                {{"source_url", "https://" + domain.name + "/" +
                                    (domain.source_type == "directory" ? "listing/" : "articles/") +
                                    slugify(c_.name) + "-" + std::to_string(path_slug)},
                 {"source_domain", domain.name},
                 {"source_type", domain.source_type},
                 {"source_id", domain.id},
                 {"target_url", target},
                 {"anchor", anchor},
                 {"anchor_type", anchor_type},
                 {"domain_authority", domain.authority},
                 {"source_authority", page_authority},
                 {"external_pages", external_pages},
                 {"linking_domains", linking_domains},
                 {"nofollow", nofollow},
                 {"status", lost ? "lost" : "active"},
                 {"first_seen", iso_time(first_seen)},
                 {"last_seen", iso_time(last_seen)},
                 {"fetched_at", fetched},
                 {"created_at", iso_time(first_seen)}});
        }
        aggregate_links(rows, fetched);
        add("backlinks", std::move(rows));
    }

    // anchor_texts and top_linked_pages summarize the backlinks, so the numbers agree.
    void aggregate_links(const std::vector<ojson>& links, const std::string& fetched) {
        struct Tally {
            std::string type;
            int backlinks = 0;
            std::set<std::string> domains;
            std::set<std::string> sources;
            std::string first_seen;
            std::string top_source;
            int top_authority = -1;
        };
        std::map<std::string, Tally> by_anchor;
        std::map<std::string, Tally> by_page;
        for (const auto& link : links) {
            const auto add_to = [&](Tally& t) {
                ++t.backlinks;
                t.domains.insert(link["source_domain"].get<std::string>());
                t.sources.insert(link["source_url"].get<std::string>());
                const auto seen = link["first_seen"].get<std::string>();
                if (t.first_seen.empty() || seen < t.first_seen) t.first_seen = seen;
                const int authority = link["domain_authority"].get<int>();
                if (authority > t.top_authority) {
                    t.top_authority = authority;
                    t.top_source = link["source_id"].get<std::string>();
                }
            };
            auto& anchor = by_anchor[link["anchor"].get<std::string>()];
            anchor.type = link["anchor_type"].get<std::string>();
            add_to(anchor);
            add_to(by_page[link["target_url"].get<std::string>()]);
        }
        std::vector<ojson> anchor_rows;
        for (const auto& [anchor, t] : by_anchor) {
            anchor_rows.push_back(
                {{"anchor", anchor},
                 {"anchor_type", t.type},
                 {"backlinks", t.backlinks},
                 {"linking_domains", static_cast<int>(t.domains.size())},
                 {"percentage",
                  round_places(100.0 * t.backlinks / static_cast<double>(links.size()), 1)},
                 {"source_id", t.top_source},
                 {"first_seen", t.first_seen},
                 {"created_at", t.first_seen}});
        }
        add("anchor_texts", std::move(anchor_rows));
        std::vector<ojson> page_rows;
        for (const auto& [url, t] : by_page) {
            const int domains = static_cast<int>(t.domains.size());
            page_rows.push_back({{"url", url},
                                 {"backlinks", t.backlinks},
                                 {"linking_domains", domains},
                                 {"external_pages", static_cast<int>(t.sources.size())},
                                 {"page_authority", std::min(60, 10 + 3 * domains)},
                                 {"fetched_at", fetched},
                                 {"created_at", t.first_seen}});
        }
        add("top_linked_pages", std::move(page_rows));
    }

    void domain_metrics() {
        auto r = rng("domain_metrics");
        int authority = r.between(12, 35);
        int linking = r.between(40, 160);
        int pages = linking * r.between(3, 8);
        std::vector<ojson> rows;
        for (int m = 5; m >= 0; --m) {
            const Seconds fetched = Seconds{kDataEnd - days{m * 30}} + hours{6};
            const int page_authority = authority + r.between(2, 8);
            const double spam = round_places(1 + r.unit() * 4, 1);
            rows.push_back({{"domain", c_.host},
                            {"domain_authority", authority},
                            {"page_authority", page_authority},
                            {"spam_score", spam},
                            {"linking_domains", linking},
                            {"external_pages", pages},
                            {"fetched_at", iso_time(fetched)},
                            {"created_at", iso_time(fetched)}});
            authority += r.between(0, 2);
            linking += r.between(2, 12);
            pages += r.between(5, 60);
        }
        add("domain_metrics", std::move(rows));
    }

    void backlink_outreach() {
        auto r = rng("backlink_outreach");
        const std::string city = slugify(c_.city);
        const std::array<std::string, 8> prospects{
            "https://" + city + "livingmagazine.example/resources",
            "https://www.homeownerhelpdesk.example/guides",
            "https://" + city + "newsnow.example/community",
            "https://thelocalreview.example/best-of-" + city,
            "https://www.smallbusinesstoday.example/contributors",
            "https://" + slugify(c_.industry) + "insider.example/write-for-us",
            "https://neighborhoodguide.example/" + city,
            "https://www.familyhomeideas.example/resources"};
        static constexpr std::array<std::string_view, 5> kStatuses{"draft", "sent", "sent",
                                                                   "replied", "won"};
        std::vector<ojson> rows;
        for (const auto& prospect : prospects) {
            const std::string tone = r.chance(0.5) ? "friendly" : "professional";
            ojson email = outreach_fields(c_, prospect, tone, r);
            const std::string status(r.pick(kStatuses));
            const Seconds created = moment(r.between(3, 120), r);
            const Seconds sent = shifted(created, hours{r.between(1, 30)});
            const Seconds updated = status == "draft" ? created : later(sent, r);
            ojson row{{"prospect_url", prospect},
                      {"prospect_domain", url_host(prospect)},
                      {"email_to", "editor@" + url_host(prospect)},
                      {"subject", email["subject"]},
                      {"html", email["html"]},
                      {"tone", tone},
                      {"status", status}};
            row["sent_at"] = status == "draft" ? ojson(nullptr) : ojson(iso_time(sent));
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(updated);
            rows.push_back(std::move(row));
        }
        add("backlink_outreach", std::move(rows));
    }

    void backlink_summaries() {
        auto r = rng("backlink_summaries");
        std::vector<ojson> rows;
        int total = r.between(40, 70);
        for (int m = 2; m >= 0; --m) {
            const int gained = r.between(2, 9);
            const int lost = r.between(0, 4);
            const int domains = total / 2 + r.between(0, 5);
            const Seconds created = Seconds{kDataEnd - days{m * 30 + 1}} + hours{7};
            rows.push_back(
                {{"summary", c_.name + " gained " + std::to_string(gained) + " and lost " +
                                 std::to_string(lost) +
                                 " backlinks in the last 30 days. Most new links come from local "
                                 "news and directory sites; anchor text is mostly branded."},
                 {"status", "completed"},
                 {"total_backlinks", total},
                 {"linking_domains", domains},
                 {"new_links_30d", gained},
                 {"lost_links_30d", lost},
                 {"created_at", iso_time(created)}});
            total += gained - lost;
        }
        add("backlink_summaries", std::move(rows));
    }

    void citations() {
        static constexpr std::array<std::string_view, 15> kDirectories{"Google Business Profile",
                                                                       "Yelp",
                                                                       "Bing Places",
                                                                       "Apple Maps",
                                                                       "Facebook",
                                                                       "Yellow Pages",
                                                                       "BBB",
                                                                       "Foursquare",
                                                                       "Nextdoor",
                                                                       "Angi",
                                                                       "Manta",
                                                                       "MapQuest",
                                                                       "Superpages",
                                                                       "Citysearch",
                                                                       "Hotfrog"};
        static constexpr std::array<std::string_view, 4> kProblems{
            "phone number differs", "old street address", "business hours missing",
            "website URL missing"};
        auto r = rng("citations");
        std::vector<ojson> rows;
        for (auto directory : kDirectories) {
            const int roll = r.between(1, 100);
            const std::string status = roll <= 60   ? "live"
                                       : roll <= 75 ? "pending"
                                       : roll <= 90 ? "needs_update"
                                                    : "not_listed";
            const Seconds created = moment(r.between(30, 500), r);
            const Seconds checked = Seconds{kDataEnd - days{r.between(0, 6)}} + hours{5};
            ojson problems = ojson::array();
            std::string accuracy = "accurate";
            if (status == "needs_update") {
                accuracy = "inconsistent";
                problems.push_back(r.pick(kProblems));
            } else if (status == "not_listed") {
                accuracy = "missing";
            } else if (status == "pending") {
                accuracy = "unverified";
            }
            ojson row{{"directory", directory},
                      {"status", status},
                      {"accuracy", accuracy},
                      {"nap_issues", problems}};
            row["listing_url"] = status == "not_listed"
                                     ? ojson(nullptr)
                                     : ojson("https://" + slugify(directory) + ".example/biz/" +
                                             slugify(c_.name + " " + c_.city));
            row["last_checked_at"] = iso_time(checked);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(later(created, r));
            rows.push_back(std::move(row));
        }
        add("citations", std::move(rows));
    }

    void locations() {
        auto r = rng("locations");
        static constexpr std::array<std::string_view, 5> kStreets{
            "Main St", "Oak Ave", "Commerce Dr", "Lakeview Blvd", "Market St"};
        std::vector<ojson> rows;
        for (int i = 0; i < c_.location_count; ++i) {
            const bool primary = i == 0;
            const std::string city = primary ? c_.city : c_.nearby_cities[0];
            const double dlat = primary ? 0.0 : 0.05 + r.unit() * 0.15;
            const double dlng = primary ? 0.0 : 0.05 + r.unit() * 0.15;
            const int number = r.between(100, 9800);
            const auto& street = r.pick(kStreets);
            const std::string address = std::to_string(number) + " " + std::string(street);
            rows.push_back({{"name", primary ? c_.name : c_.name + " - " + city},
                            {"address", address},
                            {"city", city},
                            {"state", c_.state},
                            {"zip", c_.zip},
                            {"lat", round_places(c_.lat + dlat, 4)},
                            {"lng", round_places(c_.lng - dlng, 4)},
                            {"phone", c_.phone},
                            {"is_primary", primary},
                            {"status", "active"},
                            {"created_at", iso_time(moment(720 - i * 200, r))}});
        }
        location_rows_ = rows;
        location_ids_ = add("locations", std::move(rows));
    }

    void gbp_profiles() {
        auto r = rng("gbp_profiles");
        std::vector<ojson> rows;
        for (std::size_t i = 0; i < location_ids_.size(); ++i) {
            const auto& loc = location_rows_[i];
            const double rating = round_places(3.9 + r.unit() * 1.1, 1);
            const int reviews = r.between(25, 480);
            const std::uint64_t cid = r.next() % 9000000000000000000ULL;
            const Seconds created = moment(700 - static_cast<int>(i) * 200, r);
            rows.push_back(
                {{"location_id", location_ids_[i]},
                 {"business_name", loc["name"]},
                 {"primary_category", c_.gbp_category},
                 {"status", i == 0 ? "verified" : "pending_verification"},
                 {"rating", rating},
                 {"review_count", reviews},
                 {"phone", c_.phone},
                 {"address", loc["address"].get<std::string>() + ", " +
                                 loc["city"].get<std::string>() + ", " + c_.state + " " + c_.zip},
                 {"website", c_.website()},
                 {"profile_url", "https://maps.google.com/?cid=" + std::to_string(cid)},
                 {"created_at", iso_time(created)},
                 {"updated_at", iso_time(later(created, r))}});
        }
        add("gbp_profiles", std::move(rows));
    }

    void gbp_posts() {
        auto r = rng("gbp_posts");
        const std::array<std::string, 6> topics{"Seasonal " + c_.services[0] + " special",
                                                "Meet our team",
                                                "Tips for " + c_.services[1],
                                                "Now serving " + c_.nearby_cities[1],
                                                "Same-week " + c_.services[2] + " appointments",
                                                "Customer appreciation month"};
        static constexpr std::array<std::string_view, 3> kCtas{"CALL", "BOOK", "LEARN_MORE"};
        std::vector<ojson> rows;
        for (std::size_t i = 0; i < topics.size(); ++i) {
            const std::string cta(r.pick(kCtas));
            ojson post = gbp_post_fields(c_, topics[i], cta, r);
            const int roll = r.between(1, 6);
            const std::string status = roll <= 4 ? "published" : roll == 5 ? "draft" : "scheduled";
            const Seconds created = moment(r.between(2, 200), r);
            const Seconds published = shifted(created, hours{r.between(1, 24)});
            ojson row{{"topic", topics[i]},
                      {"summary", post["summary"]},
                      {"cta", post["cta"]},
                      {"post_type", post["post_type"]},
                      {"status", status}};
            row["published_at"] =
                status == "published" ? ojson(iso_time(published)) : ojson(nullptr);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(status == "published" ? published : created);
            rows.push_back(std::move(row));
        }
        add("gbp_posts", std::move(rows));
    }

    void reviews() {
        static constexpr std::array<std::string_view, 16> kFirst{
            "Sarah", "Mike",  "Jennifer", "David", "Ashley", "Chris", "Amanda", "Kevin",
            "Laura", "Brian", "Nicole",   "Jason", "Megan",  "Ryan",  "Rachel", "Tom"};
        static constexpr std::array<std::string_view, 3> kPositive{
            "Fantastic experience with {N}. The {S} was done quickly and the team explained "
            "everything.",
            "Highly recommend {N} for {S}. Friendly, on time and fairly priced.",
            "{N} handled our {S} professionally. We will definitely call again."};
        static constexpr std::array<std::string_view, 2> kNeutral{
            "The {S} was fine but scheduling took longer than expected.",
            "Decent service from {N}. A bit pricey for the {S}, but the work was solid."};
        static constexpr std::array<std::string_view, 2> kNegative{
            "Disappointed with {N}. The {S} appointment was rescheduled twice.",
            "Had to call {N} back because the {S} did not fix the problem."};
        auto r = rng("reviews");
        std::vector<ojson> rows;
        for (int i = 0; i < 30; ++i) {
            const int roll = r.between(1, 100);
            const int rating = roll <= 55   ? 5
                               : roll <= 75 ? 4
                               : roll <= 85 ? 3
                               : roll <= 92 ? 2
                                            : 1;
            const std::string sentiment = rating >= 4   ? "positive"
                                          : rating == 3 ? "neutral"
                                                        : "negative";
            std::string text(rating >= 4   ? r.pick(kPositive)
                             : rating == 3 ? r.pick(kNeutral)
                                           : r.pick(kNegative));
            const auto& service = r.pick(c_.services);
            if (auto at = text.find("{N}"); at != std::string::npos) text.replace(at, 3, c_.name);
            if (auto at = text.find("{S}"); at != std::string::npos) text.replace(at, 3, service);
            const auto& first = r.pick(kFirst);
            const char initial = static_cast<char>('A' + r.between(0, 25));
            const std::string author = std::string(first) + " " + initial + ".";
            const int platform_roll = r.between(1, 100);
            const std::string platform = platform_roll <= 60   ? "google"
                                         : platform_roll <= 85 ? "yelp"
                                                               : "facebook";
            const auto& location = r.pick(location_ids_);
            const bool replied = r.chance(sentiment == "positive" ? 0.6 : 0.8);
            const Seconds created = moment(r.between(0, 365), r);
            ojson row{{"author", author},  {"rating", rating},     {"sentiment", sentiment},
                      {"text", text},      {"platform", platform}, {"location_id", location},
                      {"replied", replied}};
            row["reply"] = replied ? ojson("Thank you for the feedback, " + std::string(first) +
                                           ". - The " + c_.name + " team")
                                   : ojson(nullptr);
            row["created_at"] = iso_time(created);
            rows.push_back(std::move(row));
        }
        review_ids_ = add("reviews", std::move(rows));
    }

    void grid_searches() {
        auto r = rng("grid_searches");
        std::vector<ojson> rows;
        for (int i = 0; i < 6; ++i) {
            const auto& service = c_.services[static_cast<std::size_t>(i) % c_.services.size()];
            const std::string keyword =
                i % 2 ? service + " near me" : service + " " + lower(c_.city);
            ojson row = grid_fields(keyword, c_.lat, c_.lng, 5, r);
            const Seconds tracked = moment(r.between(1, 90), r);
            row["tracked_at"] = iso_time(tracked);
            row["created_at"] = iso_time(tracked);
            rows.push_back(std::move(row));
        }
        add("grid_searches", std::move(rows));
    }

    void competitors() {
        static constexpr std::array<std::string_view, 10> kAdjectives{
            "Capital",     "Premier",  "Reliable", "Evergreen", "Northside",
            "Blue Ribbon", "Hometown", "Metro",    "Precision", "Cornerstone"};
        auto r = rng("competitors");
        std::vector<ojson> rows;
        const std::size_t first = r.next() % kAdjectives.size();
        for (std::size_t i = 0; i < 8; ++i) {
            const std::string name = std::string(kAdjectives[(first + i) % kAdjectives.size()]) +
                                     " " + c_.competitor_nouns[i % c_.competitor_nouns.size()];
            const int appearances = r.between(4, 140);
            const double rank = round_places(1.5 + r.unit() * 13.5, 1);
            const double share = round_places(r.unit() * 30, 1);
            const int overlap = r.between(3, 25);
            const Seconds created = moment(r.between(60, 400), r);
            rows.push_back({{"name", name},
                            {"domain", slugify(name) + ".example"},
                            {"appearances", appearances},
                            {"average_rank", rank},
                            {"share_of_voice", share},
                            {"keywords_overlap", overlap},
                            {"created_at", iso_time(created)},
                            {"updated_at", iso_time(later(created, r))}});
            competitor_names_.push_back(name);
        }
        add("competitors", std::move(rows));
    }

    void llm_reports() {
        auto r = rng("llm_reports");
        const std::array<std::string, 6> prompts{
            "best " + c_.services[0] + " in " + c_.city,
            "who is the most trusted " + c_.services[0] + " near " + c_.city,
            "affordable " + c_.services[1] + " " + c_.city + " reviews",
            "top rated " + c_.industry + " companies in " + c_.city,
            c_.services[2] + " recommendations " + c_.city + " " + c_.state,
            "is " + c_.name + " a good choice for " + c_.services[1]};
        std::vector<ojson> rows;
        for (const auto& prompt : prompts) {
            std::vector<std::string> rivals;
            const std::size_t start = r.next() % competitor_names_.size();
            for (std::size_t i = 0; i < 3; ++i) {
                rivals.push_back(competitor_names_[(start + i * 3) % competitor_names_.size()]);
            }
            ojson row = llm_fields(c_.name, prompt, rivals, r);
            const Seconds scored = moment(r.between(1, 150), r);
            row["scored_at"] = iso_time(scored);
            row["created_at"] = iso_time(scored);
            rows.push_back(std::move(row));
        }
        add("llm_reports", std::move(rows));
        auto& table = store_.table("llm_reports", c_.id);
        for (std::size_t i = 0; i < table.size(); ++i) {
            ojson row = table.parsed(i);
            row["share_url"] = share_url("llm-reports", row["id"].get<std::string>());
            table.replace(i, make_row(row));
        }
    }

    struct Call {
        Seconds at;
        std::string intent;  // booking, price_quote, question, wrong_number, missed, voicemail
        std::string transcript;
        std::string source;
        int duration = 0;
    };

    std::string transcript_for(const std::string& intent, const std::string& service,
                               const std::string& agent, Rng& r) const {
        const std::string open = "Agent: Thank you for calling " + c_.name + ", this is " + agent +
                                 ". How can I help you today? ";
        if (intent == "booking") {
            return open + "Caller: Hi, I need help with " + service +
                   " and would like to schedule an appointment as soon as possible. Agent: We "
                   "have an opening tomorrow at 10 am. Can I get your name and address? Caller: "
                   "Yes, tomorrow at 10 works, please book it.";
        }
        if (intent == "price_quote") {
            const int low = r.between(1, 4) * 100;
            return open + "Caller: How much do you charge for " + service +
                   "? Agent: Most jobs run between $" + std::to_string(low) + " and $" +
                   std::to_string(low * 3) +
                   " depending on the details. I can send you a free estimate. Caller: Let me "
                   "think about it and call back.";
        }
        if (intent == "question") {
            return open + "Caller: Do you offer " + service + " in " + c_.nearby_cities[2] +
                   "? Agent: Yes, we serve " + c_.nearby_cities[2] +
                   " and the surrounding area. Caller: Great, thanks for the information.";
        }
        if (intent == "voicemail") {
            return "Voicemail: Hi, this is a message about " + service +
                   ". Please call me back when you can. Thanks.";
        }
        return open + "Caller: Is this the pharmacy? Agent: No, this is " + c_.name +
               ". Caller: Sorry, wrong number.";
    }

    void calls() {
        static constexpr std::array<std::string_view, 10> kAgents{
            "Maria", "Josh", "Tanya", "Alex", "Sam", "Jordan", "Nina", "Carlos", "Beth", "Omar"};
        static constexpr std::array<std::string_view, 12> kCallers{
            "Wireless Caller", "Linda Park",   "Robert Diaz",     "Wireless Caller",
            "Karen White",     "Steve Nguyen", "Wireless Caller", "Angela Ross",
            "Mark Patel",      "Julie Moore",  "Paul Turner",     "Wireless Caller"};
        auto r = rng("calls");
        std::vector<Call> list;
        for (int i = 0; i < 40; ++i) {
            Call call;
            call.at = moment(r.between(0, 90), r);
            const int roll = r.between(1, 100);
            call.intent = roll <= 35   ? "booking"
                          : roll <= 55 ? "price_quote"
                          : roll <= 70 ? "question"
                          : roll <= 78 ? "wrong_number"
                          : roll <= 90 ? "missed"
                                       : "voicemail";
            const int source_roll = r.between(1, 100);
            call.source = source_roll <= 30   ? "google_organic"
                          : source_roll <= 50 ? "google_ads"
                          : source_roll <= 75 ? "gbp"
                          : source_roll <= 85 ? "direct"
                          : source_roll <= 93 ? "referral"
                                              : "facebook";
            const auto& service = r.pick(c_.services);
            const std::string agent(r.pick(kAgents));
            if (call.intent == "missed") {
                call.duration = 0;
            } else if (call.intent == "voicemail") {
                call.duration = r.between(10, 60);
                call.transcript = transcript_for(call.intent, service, agent, r);
            } else {
                call.duration =
                    call.intent == "wrong_number" ? r.between(8, 30) : r.between(45, 900);
                call.transcript = transcript_for(call.intent, service, agent, r);
            }
            list.push_back(std::move(call));
        }
        std::stable_sort(list.begin(), list.end(),
                         [](const Call& a, const Call& b) { return a.at < b.at; });

        const std::string tracking = "+1 (" + c_.area_code + ") 555-0100";
        std::vector<ojson> scores;
        std::vector<ojson> transcriptions;
        for (const auto& call : list) {
            const std::string id = store_.next_id("call_tracking_calls", c_.id);
            const std::string vendor_id = store_.next_id(store_.vendor_resource, c_.id);
            const int caller_suffix = r.between(10, 99);
            const std::string caller(r.pick(kCallers));
            const bool first_time = r.chance(0.7);
            const std::string status = call.intent == "missed"      ? "missed"
                                       : call.intent == "voicemail" ? "voicemail"
                                                                    : "answered";
            ojson row{{"caller_number",
                       "+1 (" + c_.area_code + ") 555-01" + std::to_string(caller_suffix)},
                      {"caller_name", caller},
                      {"source", call.source},
                      {"tracking_number", tracking},
                      {"duration", call.duration},
                      {"status", status},
                      {"first_time_caller", first_time}};
            row["transcript"] = call.transcript.empty() ? ojson(nullptr) : ojson(call.transcript);
            row["recording_url"] =
                call.duration > 0
                    ? ojson("https://recordings.sample-gateway.example/" + id + ".mp3")
                    : ojson(nullptr);
            row["created_at"] = iso_time(call.at);
            ojson platform_row = row;
            platform_row["vendor"] = vendor_name();
            platform_row["vendor_call_id"] = vendor_id;
            append_with_id(store_, "call_tracking_calls", c_.id, id, platform_row);
            ojson vendor_row{{"call_id", id}};
            for (const auto& [k, v] : row.items()) vendor_row[k] = v;
            append_with_id(store_, store_.vendor_resource, c_.id, vendor_id, vendor_row);
            call_ids_.push_back(id);

            if (status != "answered") continue;
            const int score = transcript_score(call.transcript);
            const std::string grade = lead_grade(score);
            scores.push_back({{"call_id", id},
                              {"lead_grade", grade},
                              {"score", score},
                              {"qualified", score >= 60},
                              {"summary", summary_for(call.intent)},
                              {"created_at", iso_time(call.at + minutes{5})}});
            const int quality_roll = r.between(1, 10);
            const std::string quality = quality_roll <= 6   ? "good"
                                        : quality_roll <= 9 ? "fair"
                                                            : "poor";
            const double confidence = round_places(0.78 + r.unit() * 0.2, 2);
            transcriptions.push_back({{"call_id", id},
                                      {"transcript", call.transcript},
                                      {"quality_grade", quality},
                                      {"word_count", word_count(call.transcript)},
                                      {"language", "en"},
                                      {"confidence", confidence},
                                      {"duration", call.duration},
                                      {"created_at", iso_time(call.at + minutes{2})}});
        }
        add("call_scores", std::move(scores));
        add("call_transcriptions", std::move(transcriptions));
    }

    std::string vendor_name() const { return id_prefix(store_.vendor_resource, store_); }

    static std::string summary_for(const std::string& intent) {
        if (intent == "booking") return "Caller booked an appointment; strong lead.";
        if (intent == "price_quote") return "Caller asked for pricing and may call back.";
        if (intent == "question") return "Caller asked about the service area.";
        return "Not a sales opportunity.";
    }

    static int word_count(const std::string& text) {
        int words = 0;
        bool in_word = false;
        for (char ch : text) {
            const bool space = ch == ' ';
            if (!space && !in_word) ++words;
            in_word = !space;
        }
        return words;
    }

    void ai_summaries() {
        auto r = rng("ai_summaries");
        std::vector<ojson> rows;
        auto summarize = [&](const std::string& resource, const std::string& id,
                             const std::string& source_type, const std::string& text) {
            const auto& table = store_.table(resource, c_.id);
            const auto index = table.find(id);
            const ojson source = table.parsed(*index);
            const Seconds created =
                shifted(parse_time(source["created_at"].get<std::string>()), hours{1});
            rows.push_back({{"source_type", source_type},
                            {"source_id", id},
                            {"summary", text},
                            {"model", "gpt-4o-mini"},
                            {"created_at", iso_time(created)}});
        };
        for (int i = 0; i < 4; ++i) {
            const auto& id = r.pick(review_ids_);
            summarize("reviews", id, "review",
                      "Customer feedback on " + c_.name + ": mentions timeliness and price.");
        }
        for (int i = 0; i < 4; ++i) {
            const auto& id = r.pick(call_ids_);
            summarize("call_tracking_calls", id, "call",
                      "Inbound call about " + r.pick(c_.services) + "; see the lead score.");
        }
        for (int i = 0; i < 2; ++i) {
            const auto& id = r.pick(report_ids_);
            summarize("seo_reports", id, "seo_report",
                      "Audit found a handful of fixable issues; start with the critical ones.");
        }
        add("ai_summaries", std::move(rows));
    }

    static Seconds parse_time(const std::string& iso) {
        int y = 0;
        unsigned mo = 0;
        unsigned d = 0;
        int h = 0;
        int mi = 0;
        int s = 0;
        std::sscanf(iso.c_str(), "%d-%u-%uT%d:%d:%dZ", &y, &mo, &d, &h, &mi, &s);
        return Seconds{Days{std::chrono::year{y} / std::chrono::month{mo} / std::chrono::day{d}}} +
               hours{h} + minutes{mi} + seconds{s};
    }

    void ai_training() {
        auto r = rng("ai_training");
        const std::array<std::pair<std::string, std::string>, 8> entries{{
            {"Service area and hours", "website_page"},
            {title_case(c_.services[0]) + " pricing overview", "website_page"},
            {"Emergency and after-hours policy", "document"},
            {"Warranty and guarantees", "document"},
            {"Financing options", "website_page"},
            {"Team bios", "website_page"},
            {"Frequently asked questions", "faq"},
            {"Brand voice guidelines", "document"},
        }};
        std::vector<ojson> rows;
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const auto& [title, type] = entries[i];
            char digits[24];  // any size_t fits
            std::snprintf(digits, sizeof digits, "%03zu", i + 1);
            const Seconds created = moment(r.between(20, 400), r);
            const bool trained = r.chance(0.85);
            const int tokens = r.between(300, 4000);
            rows.push_back(
                {{"title", title},
                 {"source_type", type},
                 {"source_id", "src-" + c_.short_name + "-" + digits},
                 {"content", title + " for " + c_.name + " (" + c_.city + ", " + c_.state + ")."},
                 {"status", trained ? "trained" : "processing"},
                 {"tokens", tokens},
                 {"created_at", iso_time(created)},
                 {"updated_at", iso_time(later(created, r))}});
        }
        add("ai_training", std::move(rows));
    }

    void integrations() {
        auto r = rng("integrations");
        const std::string vendor = vendor_name();
        const std::array<std::pair<std::string, std::string>, 6> providers{{
            {"google_search_console", "Google Search Console"},
            {"google_analytics", "Google Analytics 4"},
            {"google_business_profile", "Google Business Profile"},
            {vendor, title_case(vendor)},
            {c_.deployment_target, title_case(c_.deployment_target)},
            {"mailgun", "Mailgun"},
        }};
        std::vector<ojson> rows;
        for (const auto& [provider, name] : providers) {
            const int roll = r.between(1, 10);
            const std::string status = roll <= 8   ? "connected"
                                       : roll == 9 ? "error"
                                                   : "disconnected";
            const Seconds created = moment(r.between(100, 600), r);
            const Seconds synced = Seconds{kDataEnd} + hours{r.between(0, 12)};
            ojson row{{"provider", provider}, {"name", name}, {"status", status}};
            row["connected_at"] =
                status == "disconnected" ? ojson(nullptr) : ojson(iso_time(created));
            row["last_synced_at"] =
                status == "connected" ? ojson(iso_time(synced)) : ojson(nullptr);
            row["error"] = status == "error" ? ojson("OAuth token expired; reconnect the account")
                                             : ojson(nullptr);
            row["created_at"] = iso_time(created);
            row["updated_at"] = iso_time(later(created, r));
            rows.push_back(std::move(row));
        }
        add("integrations", std::move(rows));
    }

    Store& store_;
    const ClientProfile& c_;
    std::uint64_t seed_;
    std::vector<std::string> category_ids_;
    std::vector<std::string> author_ids_;
    std::vector<std::string> location_ids_;
    std::vector<ojson> location_rows_;
    std::vector<std::string> review_ids_;
    std::vector<std::string> call_ids_;
    std::vector<std::string> report_ids_;
    std::vector<std::string> competitor_names_;
};

ojson client_row(const ClientProfile& c, Rng& r) {
    const Seconds created = moment(r.between(500, 900), r);
    return {{"id", c.id},
            {"name", c.name},
            {"brand_name", c.name},
            {"status", "active"},
            {"industry", c.industry},
            {"website", c.website()},
            {"phone", c.phone},
            {"city", c.city},
            {"state", c.state},
            {"lat", c.lat},
            {"lng", c.lng},
            {"auto_deploy", c.auto_deploy},
            {"deployment_target", c.deployment_target},
            {"widget_deployed_at", nullptr},
            {"created_at", iso_time(created)},
            {"updated_at", iso_time(later(created, r))}};
}

// Options::other_member_names: each row of `resource` rewritten by `rename` (member order kept).
template <typename Rename>
void rewrite_rows(Store& store, const std::string& resource, Rename rename) {
    for (const auto& [id, profile] : store.clients) {
        Table* table = store.find_table(resource, id) ? &store.table(resource, id) : nullptr;
        if (!table) continue;
        for (std::size_t i = 0; i < table->size(); ++i) {
            ojson out = ojson::object();
            const ojson row = table->parsed(i);
            for (const auto& [key, value] : row.items()) rename(out, key, value);
            table->replace(i, make_row(out));
        }
    }
}

void rename_members(Store& store) {
    rewrite_rows(store, "backlinks", [](ojson& out, const std::string& key, const ojson& value) {
        if (key == "domain_authority")
            out["authority_score"] = value;
        else if (key == "status")
            out["lost"] = value == "lost";
        else
            out[key] = value;
    });
    rewrite_rows(store, "citations", [](ojson& out, const std::string& key, const ojson& value) {
        out[key == "accuracy" ? "accuracy_status" : key] = value;
    });
}

}  // namespace

std::string append_with_id(Store& store, const std::string& resource, const std::string& client_id,
                           const std::string& id, const ojson& row) {
    ojson out{{"id", id}};
    for (const auto& [k, v] : row.items()) {
        if (k != "id") out[k] = v;
    }
    store.table(resource, client_id).append(make_row(out));
    return id;
}

void generate_sample_data(Store& store, const Options& options) {
    for (auto& profile : sample_profiles(options.bulk_keyword_rows, options.agency_clients,
                                         options.agency_tracking_dates)) {
        Rng r(mix_seed(options.seed, profile.id, "clients"));
        store.client_rows.append(make_row(client_row(profile, r)));
        const std::string id = profile.id;
        store.clients.emplace(id, std::move(profile));
    }
    for (const auto& [id, profile] : store.clients) {
        Generator(store, profile, options.seed).run(options.bulk_keyword_rows);
    }
    if (options.other_member_names) rename_members(store);
    plant_hidden_instructions(store);
    if (options.planted_lines) plant_forged_lines(store);
    if (options.phishing_article) plant_phishing_article(store);
}

}  // namespace agency::sample::detail
