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

// --- lists over one or more resources -------------------------------------------------------

}  // namespace

mcp::ToolResult merged_page(Toolbox& box, const MergedSpec& spec, const json& args,
                            mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{spec.tool, client_id, principal, &filters};
    const CursorPosition start = open_position(box, binding, args);
    const std::size_t first_source = start.extra.is_object() ? start.extra.value("s", 0u) : 0u;
    const std::string filter_value =
        spec.filter_argument.empty() ? "" : string_arg(args, spec.filter_argument.c_str());

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

namespace {


// --- date-range scans ------------------------------------------------------------------------

constexpr int kScanPageRows = 1000;

}  // namespace

mcp::ToolResult scan_page(Toolbox& box, const ScanSpec& spec, const json& args,
                          mcp::RequestContext& ctx) {
    const std::string from = string_arg(args, "from");
    const std::string to = string_arg(args, "to");
    if (!from.empty() && !to.empty() && from > to)
        return tool_error("validation", "\"from\" (" + from + ") is after \"to\" (" + to +
                                            "); give from <= to, both YYYY-MM-DD and inclusive");
    const std::string match =
        spec.match_field.empty() ? "" : string_arg(args, spec.match_field.c_str());
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

namespace {


// --- single records --------------------------------------------------------------------------

}  // namespace

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

namespace {


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
}  // namespace

mcp::ToolResult get_audit_issues(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string audit_id = args.at("audit_id").get<std::string>();
    const std::string severity = string_arg(args, "severity");
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

}  // namespace agency::tools
