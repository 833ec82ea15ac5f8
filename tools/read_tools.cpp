// Read tools: gateway GET reads turned into pages of rows with signed cursors. Rows travel as
// the gateway's raw JSON text (or a reduced row built from simdjson field views); no gateway
// page is parsed into a DOM.
#include "tools/read_tools.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "gateway/page_reader.hpp"
#include "tools/registry.hpp"

namespace agency::tools {

namespace {

std::string arg_string(const json& args, const char* name) {
    auto it = args.find(name);
    if (it == args.end() || it->is_null()) return {};
    return it->is_string() ? it->get<std::string>() : it->dump();
}

bool iequals(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
        return lower(x) == lower(y);
    });
}

// The cursor's position; 0 when there is none. Throws RpcError(-32602) for a bad cursor,
// before any gateway request.
CursorPosition open_position(const Toolbox& box, const CursorBinding& binding, const json& args) {
    auto c = args.find("cursor");
    if (c == args.end()) return {};
    return box.open_cursor(binding, c->get<std::string>());
}

// --- reduced rows ----------------------------------------------------------------------------

// An output row built from some top-level fields of a gateway row: {out, from} pairs. Adjacent
// pairs with the same `out` are alternatives: the first field present wins. Fields absent from
// the row are left out of the output row.
struct Projection {
    std::vector<std::pair<std::string, std::string>> members;
    std::vector<std::string> sources;  // distinct `from` names: what the scan extracts
    std::vector<std::string_view> names;

    explicit Projection(std::vector<std::pair<std::string, std::string>> m)
        : members(std::move(m)) {
        for (const auto& [out, from] : members)
            if (std::find(sources.begin(), sources.end(), from) == sources.end())
                sources.push_back(from);
        names.assign(sources.begin(), sources.end());
    }
    Projection(const Projection&) = delete;
    Projection& operator=(const Projection&) = delete;

    std::size_t index(const std::string& from) const {
        return static_cast<std::size_t>(std::find(sources.begin(), sources.end(), from) -
                                        sources.begin());
    }

    // Writes the reduced row into `out` (replacing its contents); `tag`, when given, becomes
    // a leading "resource" member.
    void write(std::string& out, std::span<const RowField> fields, std::string_view tag) const {
        out.assign("{");
        if (!tag.empty()) {
            out += R"("resource":)";
            mcp::append_json_string(out, tag);
        }
        std::string_view last_out;
        bool last_written = false;
        for (const auto& [name, from] : members) {
            if (name == last_out && last_written) continue;  // an earlier alternative won
            if (name != last_out) last_written = false;
            last_out = name;
            const RowField& f = fields[index(from)];
            if (!f.present()) continue;
            if (out.size() > 1) out.push_back(',');
            mcp::append_json_string(out, name);
            out.push_back(':');
            out.append(f.raw);
            last_written = true;
        }
        out.push_back('}');
    }
};

// --- lists over one or more resources -------------------------------------------------------

struct Source {
    std::string resource;
    std::string order;
    std::shared_ptr<const Projection> projection;  // null: rows as the gateway sends them
};

// Pages through `sources` one after the other (each in its own order), optionally filtered by
// one argument on every source. total is the sum of the sources' totals.
struct MergedSpec {
    std::string tool;
    std::string label;  // the answer's "resource"
    std::vector<Source> sources;
    std::string filter_field;
    std::string filter_argument;
    bool tag_rows = false;  // reduced rows name their resource
};

mcp::ToolResult merged_page(Toolbox& box, const MergedSpec& spec, const json& args,
                            mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{spec.tool, client_id, principal, &filters};
    const CursorPosition start = open_position(box, binding, args);
    const std::size_t first_source = start.extra.is_object() ? start.extra.value("s", 0u) : 0u;
    const std::string filter_value =
        spec.filter_argument.empty() ? "" : arg_string(args, spec.filter_argument.c_str());

    std::int64_t remaining = args.value("limit", 100);
    RowWriter writer(client_id, spec.label, box.settings().page_budget_bytes);
    std::int64_t total = 0;
    std::string cursor;
    bool collecting = true;
    bool resume_at_next = false;  // the page filled up exactly at the end of a source
    std::string scratch;
    for (std::size_t s = 0; s < spec.sources.size(); ++s) {
        const Source& source = spec.sources[s];
        const bool read_rows = collecting && s >= first_source;
        gateway::ReadQuery query{.resource = source.resource,
                                 .client_id = client_id,
                                 .order = source.order,
                                 .direction = "desc"};
        if (!filter_value.empty()) {
            query.filter_field = spec.filter_field;
            query.filter_value = filter_value;
        }
        const std::int64_t offset = s == first_source ? start.offset : 0;
        // Sources not read for rows still count towards total: a one-row read gives it.
        query.limit = read_rows ? static_cast<int>(remaining) : 1;
        query.offset = read_rows ? offset : 0;
        if (!read_rows) {
            const gateway::Page page = box.gateway().read(query, ctx.stop);
            total += page.pagination.total;
            if (resume_at_next && cursor.empty() && page.pagination.total > 0)
                cursor = box.issue_cursor(binding, 0, json{{"s", s}});
            continue;
        }
        // Rows and pagination in one parse of the page.
        gateway::Page page = box.gateway().read_body(query, ctx.stop);

        std::int64_t written = 0;
        bool cut = false;
        auto add = [&](std::string_view row) {
            if (!writer.add(row)) return !(cut = true);
            ++written;
            return true;
        };
        if (source.projection) {
            const Projection& p = *source.projection;
            const std::string_view tag = spec.tag_rows ? std::string_view(source.resource) : "";
            box.gateway().walk(page, {.fields = p.names}, [&](const Row& row) {
                p.write(scratch, row.fields, tag);
                return add(scratch);
            });
        } else {
            box.gateway().walk(page, {}, [&](const Row& row) { return add(row.json); });
        }
        total += page.pagination.total;
        const std::int64_t next = offset + written;
        remaining -= written;
        if (cut || next < page.pagination.total) {
            // Continue exactly at the first row left out.
            cursor = box.issue_cursor(binding, next, json{{"s", s}});
            collecting = false;
        } else if (remaining <= 0) {
            collecting = false;
            resume_at_next = true;
        }
    }
    return mcp::ToolResult::structured(writer.finish(total, cursor));
}

// --- date-range scans ------------------------------------------------------------------------

// A list the gateway cannot filter: pages through `resource` newest first (limit 1000) and keeps
// the rows whose date lies in [from, to] (and whose `match_field` equals the argument of that
// name, ignoring case). Stops at the first row older than `from`. The cursor holds the gateway
// offset of the first matching row left out, and how many rows earlier pages returned, so
// that the last page can state total.
struct ScanSpec {
    std::string tool;
    std::string resource;
    std::string order_field;     // a date field the gateway orders by
    std::string fallback_field;  // the row's date when it lacks order_field
    std::string match_field;     // "" = none
};

constexpr int kScanPageRows = 1000;

mcp::ToolResult scan_page(Toolbox& box, const ScanSpec& spec, const json& args,
                          mcp::RequestContext& ctx) {
    const std::string from = arg_string(args, "from");
    const std::string to = arg_string(args, "to");
    if (!from.empty() && !to.empty() && from > to)
        return tool_error("validation", "\"from\" (" + from + ") is after \"to\" (" + to +
                                            "); give from <= to, both YYYY-MM-DD and inclusive");
    const std::string match =
        spec.match_field.empty() ? "" : arg_string(args, spec.match_field.c_str());
    const std::string client_id = args.at("client_id").get<std::string>();
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{spec.tool, client_id, principal, &filters};
    const CursorPosition start = open_position(box, binding, args);
    const std::int64_t earlier = start.extra.is_object() ? start.extra.value("n", 0) : 0;
    const std::size_t limit = args.value("limit", 100u);

    std::array<std::string_view, 3> names{
        spec.order_field, spec.fallback_field,
        spec.match_field.empty() ? spec.order_field : spec.match_field};
    // Without `from` no row ends the scan early, so the rows that cannot hold the wanted value
    // are passed over unread (most of them, when one keyword of many is asked for).
    const gateway::WalkOptions walk{.fields = names,
                                    .must_contain = from.empty() ? std::string_view(match) : ""};
    RowWriter writer(client_id, spec.resource, box.settings().page_budget_bytes);
    std::string cursor;
    bool done = false;
    std::int64_t offset = start.offset;
    std::optional<std::int64_t> total_rows;  // the gateway's total, once a page has said it
    gateway::PageReader pages(box.gateway(),
                              {.resource = spec.resource,
                               .client_id = client_id,
                               .limit = kScanPageRows,
                               .order = spec.order_field,
                               .direction = "desc"},
                              ctx.stop);
    while (!done) {
        if (ctx.stop.stop_requested())
            throw gateway::Error(gateway::ErrorReason::cancelled, "the request was cancelled");
        // The next pages are fetched while this one is walked, once a total says they exist.
        gateway::Page page = pages.read(offset, total_rows);
        const gateway::WalkResult walked = box.gateway().walk(page, walk, [&](const Row& row) {
            const std::span<const RowField> f = row.fields;
            const std::int64_t at = offset + static_cast<std::int64_t>(row.index);
            const RowField& date_field = f[0].present() ? f[0] : f[1];
            const std::string_view date = date_field.is_string && date_field.text.size() >= 10
                                              ? date_field.text.substr(0, 10)
                                              : std::string_view();
            // Newest first: a dated row older than `from` means every later row is too. Rows
            // lacking the order field sort last, so they do not prove it.
            if (!from.empty() && f[0].present() && !date.empty() && date < from) {
                done = true;
                return false;
            }
            if ((!from.empty() || !to.empty()) && date.empty()) return true;
            if (!to.empty() && date > to) return true;
            if (!match.empty() && !(f[2].is_string && iequals(f[2].text, match))) return true;
            if (writer.count() >= limit || !writer.add(row.json)) {
                cursor = box.issue_cursor(
                    binding, at, json{{"n", earlier + static_cast<std::int64_t>(writer.count())}});
                done = true;
                return false;
            }
            return true;
        });
        offset += static_cast<std::int64_t>(walked.rows);
        total_rows = page.pagination.total;
        if (walked.rows == 0 || offset >= page.pagination.total) break;
    }
    // The count is known once the scan has reached the end of the range.
    std::optional<std::int64_t> total;
    if (cursor.empty()) total = earlier + static_cast<std::int64_t>(writer.count());
    return mcp::ToolResult::structured(writer.finish(total, cursor));
}

// --- single records --------------------------------------------------------------------------

mcp::ToolResult get_client(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string id = args.at("client_id").get<std::string>();
    gateway::Page page = box.gateway().read_body(
        {.resource = "clients", .limit = 1, .filter_field = "id", .filter_value = id}, ctx.stop);
    std::string found;
    box.gateway().walk(page, {}, [&](const Row& row) {
        found.assign(row.json);
        return false;
    });
    if (found.empty())
        return tool_error("not_found", "no client with id \"" + id +
                                           "\" is reachable with this key; list_clients gives "
                                           "the ids it can reach");
    return mcp::ToolResult::structured(std::move(found));
}

const Projection& audit_summary() {
    static const Projection p({{"id", "id"},
                               {"url", "url"},
                               {"score", "score"},
                               {"issues_found", "issues_found"},
                               {"created_at", "created_at"},
                               {"share_url", "share_url"}});
    return p;
}

// One audit's issues, paged like a list: the cursor offset counts issues that match `severity`.
mcp::ToolResult get_audit_issues(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string audit_id = args.at("audit_id").get<std::string>();
    const std::string severity = arg_string(args, "severity");
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{"get_audit_issues", client_id, principal, &filters};
    const std::int64_t offset = open_position(box, binding, args).offset;
    const std::size_t limit = args.value("limit", 100u);

    gateway::Page page = box.gateway().read_body({.resource = "seo_reports",
                                                   .client_id = client_id,
                                                   .limit = 1,
                                                   .filter_field = "id",
                                                   .filter_value = audit_id},
                                                  ctx.stop);
    const Projection& p = audit_summary();
    std::vector<std::string_view> names = p.names;
    names.push_back("issues");  // last: the summary is written from the fields before it
    std::string audit;          // the "audit" member: the report without its issues
    std::string issues;         // the issues array, parsed once the page parse is over
    bool found = false;
    box.gateway().walk(page, {.fields = names}, [&](const Row& row) {
        const std::span<const RowField> f = row.fields;
        found = true;
        std::string summary;
        p.write(summary, f.first(f.size() - 1), "");
        audit = R"("audit":)" + summary;
        const RowField& list = f.back();
        if (list.present() && list.raw.front() == '[') issues.assign(list.raw);
        return false;
    });
    if (!found)
        return tool_error("not_found", "no audit with id \"" + audit_id + "\" for client " +
                                           client_id + "; list_audits gives the audit ids");

    RowWriter writer(client_id, "seo_reports", box.settings().page_budget_bytes);
    std::int64_t matched = 0;
    std::string cursor;
    if (!issues.empty()) {
        static constexpr std::array<std::string_view, 1> kSeverity{"severity"};
        gateway::Page list{.body = R"({"data":)" + issues + "}",
                           .what = "issues of audit " + audit_id};
        box.gateway().walk(list, {.fields = kSeverity}, [&](const Row& issue) {
            const RowField& level = issue.fields[0];
            if (!severity.empty() && !(level.is_string && iequals(level.text, severity)))
                return true;
            const std::int64_t at = matched++;
            if (at < offset || !cursor.empty()) return true;  // before this page, or after it
            if (writer.count() >= limit || !writer.add(issue.json))
                cursor = box.issue_cursor(binding, at);
            return true;  // keep counting for total
        });
    }
    return mcp::ToolResult::structured(writer.finish(matched, cursor, audit));
}

// --- registration helpers ----------------------------------------------------------------

constexpr std::array<std::string_view, 9> kCuratedResources{
    "clients",   "keywords",  "seo_reports",         "blogs",      "geo_articles",
    "backlinks", "citations", "call_tracking_calls", "llm_reports"};

}  // namespace

bool covered_by_curated_tool(std::string_view resource) {
    return std::find(kCuratedResources.begin(), kCuratedResources.end(), resource) !=
           kCuratedResources.end();
}

json filter_arguments(const json& args) {
    json filters = args;
    filters.erase("limit");
    filters.erase("cursor");
    return filters;
}

mcp::ToolResult list_page(Toolbox& box, const ListSpec& spec, const json& args,
                          mcp::RequestContext& ctx) {
    const std::string client_id = spec.per_client ? args.at("client_id").get<std::string>() : "";
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    CursorBinding binding{spec.tool, client_id, principal, &filters};
    const std::int64_t offset = open_position(box, binding, args).offset;

    gateway::ReadQuery query;
    query.resource = spec.resource;
    query.client_id = client_id;
    query.limit = args.value("limit", spec.default_limit);
    query.offset = offset;
    query.order = spec.order;
    query.direction = spec.direction;
    if (!spec.filter_field.empty()) {
        query.filter_field = spec.filter_field;
        if (!spec.filter_argument.empty()) {
            auto f = args.find(spec.filter_argument);
            if (f == args.end()) {
                query.filter_field.clear();
            } else {
                query.filter_value = f->is_string() ? f->get<std::string>() : f->dump();
            }
        } else {
            query.filter_value = spec.filter_value;
        }
    }
    // Rows and pagination in one parse of the page.
    gateway::Page page = box.gateway().read_body(query, ctx.stop);

    RowWriter writer(client_id, spec.resource, box.settings().page_budget_bytes);
    box.gateway().walk(page, {}, [&](const Row& row) { return writer.add(row.json); });
    // Continue exactly at the first row this answer left out (page end or size budget).
    const std::int64_t next = offset + static_cast<std::int64_t>(writer.count());
    std::string cursor = next < page.pagination.total ? box.issue_cursor(binding, next) : "";
    return mcp::ToolResult::structured(writer.finish(page.pagination.total, cursor));
}

void register_read_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box) {
    auto list_tool = [&](ToolSpec tool, ListSpec spec) {
        spec.tool = tool.name;
        tool.handler = [box, spec](const json& args, mcp::RequestContext& ctx) {
            return list_page(*box, spec, args, ctx);
        };
        add_tool(server, std::move(tool));
    };
    auto merged_tool = [&](ToolSpec tool, MergedSpec spec) {
        spec.tool = tool.name;
        tool.handler = [box, spec = std::move(spec)](const json& args, mcp::RequestContext& ctx) {
            return merged_page(*box, spec, args, ctx);
        };
        add_tool(server, std::move(tool));
    };
    auto scan_tool = [&](ToolSpec tool, ScanSpec spec) {
        spec.tool = tool.name;
        tool.handler = [box, spec](const json& args, mcp::RequestContext& ctx) {
            return scan_page(*box, spec, args, ctx);
        };
        add_tool(server, std::move(tool));
    };
    auto projection = [](std::vector<std::pair<std::string, std::string>> members) {
        return std::make_shared<const Projection>(std::move(members));
    };

    list_tool({.name = "list_clients",
               .title = "List clients",
               .description = "Clients this agency can reach, with their ids. Start here: every "
                              "other tool takes a client_id.",
               .input_schema = "list_clients.input",
               .output_schema = "list_clients.output",
               .mapping = "GET resource=clients (limit, offset from the cursor)"},
              {.resource = "clients", .per_client = false});

    add_tool(server, {.name = "get_client",
                      .title = "Get client",
                      .description = "One client's record by id: name, website, location, "
                                     "industry, auto-deploy setting and deployment target.",
                      .input_schema = "get_client.input",
                      .output_schema = "get_client.output",
                      .mapping = "GET resource=clients, filter_field=id (not_found when absent)",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return get_client(*box, args, ctx);
                      }});

    list_tool({.name = "list_keywords",
               .title = "List tracked keywords",
               .description = "Tracked keyword rankings of a client (keyword, position, url, "
                              "search volume, difficulty, tracking date), newest first. Pages "
                              "with limit and cursor.",
               .input_schema = "list_keywords.input",
               .output_schema = "list_keywords.output",
               .mapping = "GET resource=keywords, order=tracked_at desc"},
              {.resource = "keywords", .order = "tracked_at", .direction = "desc"});

    scan_tool({.name = "list_rankings",
               .title = "Keyword ranking history",
               .description = "Ranking rows of a client's tracked keywords tracked between from "
                              "and to (inclusive), newest first, optionally for one keyword "
                              "(exact, any case). total appears on the last page.",
               .input_schema = "list_rankings.input",
               .output_schema = "list_rankings.output",
               .mapping = "GET resource=keywords, order=tracked_at desc, limit=1000 pages; "
                          "keyword and date range filtered by the tool, stops past `from`"},
              {.resource = "keywords",
               .order_field = "tracked_at",
               .fallback_field = "created_at",
               .match_field = "keyword"});

    merged_tool({.name = "list_audits",
                 .title = "List SEO audits",
                 .description = "SEO audit reports of a client, newest first: url, score, issue "
                                "counts, date and share link. Issues of one audit: "
                                "get_audit_issues.",
                 .input_schema = "list_audits.input",
                 .output_schema = "list_audits.output",
                 .mapping = "GET resource=seo_reports, order=created_at desc (rows reduced, "
                            "issues left out)"},
                {.label = "seo_reports",
                 .sources = {{"seo_reports", "created_at",
                              projection({{"id", "id"},
                                          {"url", "url"},
                                          {"score", "score"},
                                          {"issues_found", "issues_found"},
                                          {"issue_counts", "issue_counts"},
                                          {"status", "status"},
                                          {"created_at", "created_at"},
                                          {"share_url", "share_url"}})}}});

    add_tool(server, {.name = "get_audit_issues",
                      .title = "Get audit issues",
                      .description = "Issues found by one SEO audit (severity, page, "
                                     "recommendation), optionally of one severity; audit_id "
                                     "comes from list_audits.",
                      .input_schema = "get_audit_issues.input",
                      .output_schema = "get_audit_issues.output",
                      .mapping = "GET resource=seo_reports, filter_field=id (the row's issues, "
                                 "paged by the tool)",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return get_audit_issues(*box, args, ctx);
                      }});

    list_tool({.name = "list_backlinks",
               .title = "List backlinks",
               .description = "Backlinks of a client, strongest sources first: source url and "
                              "domain, anchor, target page, domain authority, first-seen date, "
                              "status.",
               .input_schema = "list_backlinks.input",
               .output_schema = "list_backlinks.output",
               .mapping = "GET resource=backlinks, order=linking_domains desc"},
              {.resource = "backlinks", .order = "linking_domains", .direction = "desc"});

    list_tool({.name = "list_citations",
               .title = "List citations",
               .description = "Directory listings (citations) of a client: directory, listing "
                              "status, NAP accuracy and issues, listing url.",
               .input_schema = "list_citations.input",
               .output_schema = "list_citations.output",
               .mapping = "GET resource=citations, order=created_at desc"},
              {.resource = "citations", .order = "created_at", .direction = "desc"});

    merged_tool({.name = "list_articles",
                 .title = "List articles",
                 .description = "Blog articles, then geo-targeted articles, of a client, newest "
                                "first: title, keyword, status, url, deployment target. "
                                "Optionally one status (e.g. draft, published).",
                 .input_schema = "list_articles.input",
                 .output_schema = "list_articles.output",
                 .mapping = "GET resource=blogs, then resource=geo_articles; order=created_at "
                            "desc, filter_field=status when given (rows reduced)"},
                {.label = "blogs,geo_articles",
                 .sources = {{"blogs", "created_at",
                              projection({{"id", "id"},
                                          {"title", "post_title"},
                                          {"title", "title"},
                                          {"keyword", "keyword"},
                                          {"status", "status"},
                                          {"url", "url"},
                                          {"deployment_target", "deployment_target"},
                                          {"word_count", "word_count"},
                                          {"created_at", "created_at"},
                                          {"deployed_at", "deployed_at"}})},
                             {"geo_articles", "created_at",
                              projection({{"id", "id"},
                                          {"title", "title"},
                                          {"title", "post_title"},
                                          {"keyword", "keyword"},
                                          {"status", "status"},
                                          {"url", "url"},
                                          {"deployment_target", "deployment_target"},
                                          {"word_count", "word_count"},
                                          {"city", "city"},
                                          {"state", "state"},
                                          {"created_at", "created_at"},
                                          {"deployed_at", "deployed_at"}})}},
                 .filter_field = "status",
                 .filter_argument = "status",
                 .tag_rows = true});

    scan_tool({.name = "list_calls",
               .title = "List calls",
               .description = "Tracked phone calls of a client between from and to (inclusive, "
                              "UTC dates), newest first: caller, source, duration, status, "
                              "transcript, recording. total appears on the last page.",
               .input_schema = "list_calls.input",
               .output_schema = "list_calls.output",
               .mapping = "GET resource=call_tracking_calls, order=created_at desc, limit=1000 "
                          "pages; date range filtered by the tool, stops past `from`"},
              {.resource = "call_tracking_calls",
               .order_field = "created_at",
               .fallback_field = "created_at"});

    merged_tool({.name = "list_reports",
                 .title = "List shareable reports",
                 .description = "Reports of a client with their share links: SEO audits, then "
                                "answer-engine (LLM) visibility reports, newest first.",
                 .input_schema = "list_reports.input",
                 .output_schema = "list_reports.output",
                 .mapping = "GET resource=seo_reports (order=created_at desc), then "
                            "resource=llm_reports (order=scored_at desc); rows reduced"},
                {.label = "seo_reports,llm_reports",
                 .sources = {{"seo_reports", "created_at",
                              projection({{"id", "id"},
                                          {"url", "url"},
                                          {"score", "score"},
                                          {"issues_found", "issues_found"},
                                          {"created_at", "created_at"},
                                          {"share_url", "share_url"}})},
                             {"llm_reports", "scored_at",
                              projection({{"id", "id"},
                                          {"prompt", "prompt"},
                                          {"score", "visibility_score"},
                                          {"mention_count", "mention_count"},
                                          {"created_at", "scored_at"},
                                          {"created_at", "created_at"},
                                          {"share_url", "share_url"}})}},
                 .tag_rows = true});

    // Every discovered resource no curated tool covers, so a deployment's new resources are
    // readable without a release. A failing discovery propagates: start-up reports it.
    json resources = json::array();
    for (const auto& name : box->gateway().discovery()->resources)
        if (!covered_by_curated_tool(name)) resources.push_back(name);
    if (resources.empty()) return;
    add_tool(server,
             {.name = "read_resource",
              .title = "Read any resource",
              .description = "Rows of another gateway resource (reviews, competitors, "
                             "call_scores, ...), with optional order and exact-match filter. "
                             "Prefer a dedicated list tool where one exists.",
              .input_schema = "read_resource.input",
              .input_schema_patch = {{"properties", {{"resource", {{"enum", resources}}}}}},
              .output_schema = "read_resource.output",
              .mapping = "GET resource=<resource> with order, direction, filter_field, "
                         "filter_value passed through",
              .handler = [box](const json& args, mcp::RequestContext& ctx) {
                  ListSpec spec{.tool = "read_resource",
                                .resource = args.at("resource").get<std::string>(),
                                .order = arg_string(args, "order"),
                                .direction = arg_string(args, "direction"),
                                .filter_field = arg_string(args, "filter_field"),
                                .filter_argument = "filter_value"};
                  return list_page(*box, spec, args, ctx);
              }});
}

}  // namespace agency::tools
