// Read tools: gateway GET reads turned into pages of rows with signed cursors. Rows travel as
// the gateway's raw JSON text (or rewritten by the page walk, members dropped or renamed); no
// gateway page is parsed into a DOM.
#include "tools/reads/read_tools.hpp"
#include "tools/pipeline/client_scope.hpp"
#include "tools/reads/list_query.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>

#include "base/text.hpp"
#include "gateway/page_reader.hpp"

namespace agency::tools {

namespace {

// The cursor's position; 0 when there is none. Throws RpcError(-32602) for a bad cursor,
// before any gateway request.
CursorPosition open_position(const Toolbox& box, const CursorBinding& binding, const json& args) {
    auto c = args.find("cursor");
    if (c == args.end()) return {};
    return box.open_cursor(binding, c->get<std::string>());
}

}  // namespace

// --- row shapes, budgets, notes --------------------------------------------------------------

RowSelect::RowSelect(const RowShape* shape, const json& args) {
    if (auto f = args.find("fields"); f != args.end() && f->is_array()) {
        for (const auto& name : *f)
            if (name.is_string()) keep_.push_back(name.get<std::string>());
        keep_views_.assign(keep_.begin(), keep_.end());
        selection_.keep = keep_views_;
        active_ = !keep_.empty();
    }
    if (shape && (!shape->drop.empty() || !shape->rename.empty())) {
        selection_.drop = shape->drop;
        selection_.rename = shape->rename;
        active_ = true;
    }
}

std::string_view RowSelect::row(const Row& row, std::string_view tag, std::string& scratch) const {
    const std::string_view body = active_ ? row.selected : row.json;
    if (tag.empty()) return body;
    scratch.assign(R"({"resource":)");
    mcp::append_json_string(scratch, tag);
    // body is an object's text: "{}" or "{...}".
    const std::string_view rest = body.substr(1);
    if (rest.find_first_not_of(" \t\r\n") != std::string_view::npos && rest.front() != '}')
        scratch.push_back(',');
    scratch.append(rest);
    return scratch;
}

std::size_t answer_budget(const Settings& settings, const json& args) {
    if (auto m = args.find("max_bytes"); m != args.end() && m->is_number_integer())
        return m->get<std::size_t>();
    if (args.contains("limit")) return settings.page_budget_bytes;
    return std::min(settings.default_page_bytes, settings.page_budget_bytes);
}

std::string empty_note(std::string_view client_id, std::string_view resource,
                       std::string_view filter, std::int64_t total, std::int64_t offset) {
    const std::string who = "client " + std::string(client_id);
    const std::string what = std::string(resource) + " rows";
    if (total > 0 && offset >= total)
        return "no rows past the first " + std::to_string(total) + ": the list ends there";
    if (total > 0)
        return "the gateway counts " + std::to_string(total) + " " + what +
               (filter.empty() ? "" : " matching " + std::string(filter)) +
               " but returned none on this page";
    if (!filter.empty())
        return "no " + what + " of " + who + " match " + std::string(filter) +
               " (an exact match); without it the list may have rows";
    return client_id.empty() ? "the gateway returned no " + what
                             : who + " has no " + what + " at this gateway";
}

json filter_arguments(const json& args) {
    // What shapes the rows' selection and size, not which rows: a cursor survives a change.
    json filters = args;
    for (const char* name : {"limit", "cursor", "fields", "max_bytes"}) filters.erase(name);
    return filters;
}

// --- one resource ----------------------------------------------------------------------------

namespace {

// The gateway filter a list tool asks for itself: {field, value}, or {"", ""}.
std::pair<std::string, std::string> own_filter(const ListSpec& spec, const json& args) {
    if (spec.filter_field.empty()) return {};
    if (spec.filter_argument.empty()) return {spec.filter_field, spec.filter_value};
    auto f = args.find(spec.filter_argument);
    if (f == args.end()) return {};
    return {spec.filter_field, f->is_string() ? f->get<std::string>() : f->dump()};
}

// list_clients under a key limited to some clients: only their rows.
void keep_scope(QueryTool& tool, const std::vector<std::string>& scope) {
    tool.own_fields = {"id", "client_id"};
    tool.binding_extra = scope;
    tool.own_test = [&scope](std::span<const RowField> f) {
        const RowField& id = f[0].present() ? f[0] : f[1];
        const std::string text(id.is_string ? id.text : id.raw);
        return std::find(scope.begin(), scope.end(), text) != scope.end() ? OwnVerdict::keep
                                                                          : OwnVerdict::skip;
    };
}

}  // namespace

mcp::ToolResult list_page(Toolbox& box, const ListSpec& spec, const json& args,
                          mcp::RequestContext& ctx) {
    std::string bad;
    const ListQuery list_query = parse_list_query(args, bad);
    if (!bad.empty()) return tool_error("validation", bad);
    const bool scoped =
        !spec.per_client && spec.resource == "clients" && !ctx.principal.clients.empty();
    if (list_query.active()) {
        const auto [field, value] = own_filter(spec, args);
        QueryTool tool{.tool = spec.tool,
                       .label = spec.resource,
                       .client_id = spec.per_client ? args.at("client_id").get<std::string>() : "",
                       .sources = {{.resource = spec.resource,
                                    .order = spec.order,
                                    .direction = spec.direction,
                                    .filter_field = field,
                                    .filter_value = value}},
                       .default_limit = spec.default_limit};
        if (scoped) keep_scope(tool, ctx.principal.clients);
        return query_page(box, tool, list_query, args, ctx);
    }
    if (scoped) return scoped_clients_page(box, spec, args, ctx);
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
    std::tie(query.filter_field, query.filter_value) = own_filter(spec, args);
    // Rows and pagination in one parse of the page.
    gateway::Page page = box.gateway().read_body(query, ctx.stop);

    const RowSelect select(nullptr, args);
    RowWriter writer(client_id, spec.resource, answer_budget(box.settings(), args));
    std::string scratch;
    box.gateway().walk(page, {.select = select.selection()}, [&](const Row& row) {
        return writer.add(select.row(row, "", scratch), row.members_left_out);
    });
    // Continue exactly at the first row this answer left out (page end or size budget).
    const std::int64_t next = offset + static_cast<std::int64_t>(writer.count());
    std::string cursor = next < page.pagination.total ? box.issue_cursor(binding, next) : "";
    if (writer.count() == 0) {
        const std::string filter =
            query.filter_field.empty() ? "" : query.filter_field + " = " + query.filter_value;
        writer.set_note(
            empty_note(client_id, spec.resource, filter, page.pagination.total, offset));
    }
    return mcp::ToolResult::structured(writer.finish(page.pagination.total, cursor));
}

// --- several resources, one after the other --------------------------------------------------

mcp::ToolResult merged_page(Toolbox& box, const MergedSpec& spec, const json& args,
                            mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    std::string bad;
    ListQuery list_query = parse_list_query(args, bad);
    if (!bad.empty()) return tool_error("validation", bad);
    std::string value = spec.filter_argument.empty() ? "" : string_arg(args, spec.filter_argument);
    if (spec.filter_field == "status" && (value == "draft" || value == "drafted")) {
        // One word for one state: the gateway's rows say draft, the planned tools' results
        // say drafted (the spec's word); either finds the rows saying either.
        list_query.where.push_back({"status", WhereOp::in, json::array({"draft", "drafted"})});
        if (list_query.member_index("status") == list_query.members.size())
            list_query.members.push_back("status");
        value.clear();
    }
    if (list_query.active()) {
        QueryTool tool{.tool = spec.tool, .label = spec.label, .client_id = client_id};
        for (const Source& source : spec.sources)
            tool.sources.push_back({.resource = source.resource,
                                    .order = source.order,
                                    .direction = "desc",
                                    .shape = source.shape,
                                    .filter_field = value.empty() ? "" : spec.filter_field,
                                    .filter_value = value,
                                    .tag = spec.tag_rows ? source.resource : ""});
        return query_page(box, tool, list_query, args, ctx);
    }
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{spec.tool, client_id, principal, &filters};
    const CursorPosition start = open_position(box, binding, args);
    const std::size_t first_source = start.extra.is_object() ? start.extra.value("s", 0u) : 0u;
    const std::string filter_value =
        spec.filter_argument.empty() ? "" : string_arg(args, spec.filter_argument.c_str());

    std::int64_t remaining = args.value("limit", 100);
    RowWriter writer(client_id, spec.label, answer_budget(box.settings(), args));
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
        const RowSelect select(&source.shape, args);
        const std::string_view tag = spec.tag_rows ? std::string_view(source.resource) : "";
        box.gateway().walk(page, {.select = select.selection()}, [&](const Row& row) {
            if (!writer.add(select.row(row, tag, scratch), row.members_left_out)) return false;
            ++written;
            return true;
        });
        total += page.pagination.total;
        const std::int64_t next = offset + written;
        remaining -= written;
        if (writer.truncated() || next < page.pagination.total) {
            // Continue exactly at the first row left out.
            cursor = box.issue_cursor(binding, next, json{{"s", s}});
            collecting = false;
        } else if (remaining <= 0) {
            collecting = false;
            resume_at_next = true;
        }
    }
    if (writer.count() == 0) {
        const std::string filter =
            filter_value.empty() ? "" : spec.filter_field + " = " + filter_value;
        writer.set_note(empty_note(client_id, spec.label, filter, total, 0));
    }
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
    base::clean_untrusted_json(found);
    found = bounded_record(std::move(found), box.settings().page_budget_bytes);
    if (found.empty())
        return tool_error("not_found", "no client with id \"" + id +
                                           "\" is reachable with this key; list_clients gives "
                                           "the ids it can reach");
    mcp::ToolResult result = mcp::ToolResult::structured(std::move(found));
    result.record_heading = "record";  // every member is the gateway's
    return result;
}

// --- one audit's issues ----------------------------------------------------------------------

namespace {

// report_id, or its old name audit_id; "" with `error` set when neither or two differ.
std::string report_id_of(const json& args, std::string& error) {
    const std::string report = string_arg(args, "report_id");
    const std::string old = string_arg(args, "audit_id");
    if (report.empty() && old.empty())
        error = "missing required argument \"report_id\" (the id of a list_audits row)";
    else if (!report.empty() && !old.empty() && report != old)
        error = "report_id (\"" + report + "\") and its old name audit_id (\"" + old +
                "\") differ; give report_id alone";
    return report.empty() ? old : report;
}

// The note of a report that holds counts but no issue list, or "" when it has the list.
std::string counts_only_note(std::span<const RowField> f) {
    const RowField& list = f[0];
    const bool has_list = list.present() && list.raw.front() == '[';
    const bool counts = f[1].present()
                            ? f[1].raw != "0"
                            : f[2].raw.find_first_of("123456789") != std::string_view::npos;
    if (has_list && (list.raw.find('{') != std::string_view::npos || !counts)) return "";
    if (!counts && !has_list) return "this report carries no issue list and no issue counts";
    std::string note =
        "this gateway returns issue counts for its audit reports, not the issues "
        "themselves";
    if (f[1].present()) note += " (issues_found: " + std::string(f[1].raw) + ")";
    return note + "; the counts are in \"audit\"";
}

// Where a gateway whose reports lack the issue list keeps per-page detail: its seo_tasks (one
// row per page and fix), read through read_resource, when its discovery lists them; else "".
// One row read says whether the tasks name their report: then the pointer filters by it;
// otherwise the note says the tasks are not linked to this report.
std::string issue_detail_pointer(Toolbox& box, const std::string& client_id,
                                 const std::string& report_id, mcp::RequestContext& ctx) {
    try {
        if (!box.gateway().discovery(ctx.stop)->has_resource("seo_tasks")) return "";
    } catch (const gateway::Error&) {
        return "";  // discovery unreachable: point nowhere rather than guess
    }
    static constexpr std::array<std::string_view, 3> kLinks{"report_id", "seo_report_id",
                                                            "audit_id"};
    std::string link;     // the member naming a task's report, when the rows have one
    bool looked = false;  // a task row was read
    try {
        gateway::Page page = box.gateway().read_body(
            {.resource = "seo_tasks", .client_id = client_id, .limit = 1}, ctx.stop);
        box.gateway().walk(page, {.fields = kLinks}, [&](const Row& row) {
            looked = true;
            for (std::size_t i = 0; i < kLinks.size() && link.empty(); ++i)
                if (row.fields[i].present() && row.fields[i].raw != "null") link = kLinks[i];
            return false;
        });
    } catch (const gateway::Error&) {
        // Unread: point at the tasks without saying how they link.
    }
    std::string out =
        "; per-page issues and their fixes may be in this gateway's seo_tasks "
        "(each row names a page url, a task and its priority): read_resource with "
        "resource \"seo_tasks\" and client_id \"" +
        client_id + "\"";
    if (!link.empty())
        return out + " and where {\"" + link + "\": \"" + report_id + "\"} (this report's tasks)";
    out += " (filter_field status or category_id narrows it)";
    if (!looked) return out;
    return out +
           ". Those rows name no audit report: they are the client's tasks from every "
           "audit, not this report's issues";
}

}  // namespace

mcp::ToolResult get_audit_issues(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    std::string bad;
    const std::string report_id = report_id_of(args, bad);
    if (!bad.empty()) return tool_error("validation", bad);
    const std::string severity = string_arg(args, "severity");
    json filters = filter_arguments(args);
    filters.erase("audit_id");
    filters["report_id"] = report_id;  // either name continues the other's cursor
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{"get_audit_issues", client_id, principal, &filters};
    const std::int64_t offset = open_position(box, binding, args).offset;
    const std::size_t limit = args.value("limit", 100u);

    gateway::Page page = box.gateway().read_body({.resource = "seo_reports",
                                                  .client_id = client_id,
                                                  .limit = 1,
                                                  .filter_field = "id",
                                                  .filter_value = report_id},
                                                 ctx.stop);
    const std::size_t budget = answer_budget(box.settings(), args);
    static constexpr std::array<std::string_view, 3> kNames{"issues", "issues_found",
                                                            "issue_counts"};
    static constexpr std::array<std::string_view, 1> kDrop{"issues"};
    const gateway::RowSelection without_issues{.drop = kDrop};
    std::string audit;   // the "audit" member: the report without its issues
    std::string issues;  // the issues array, walked once the page walk is over
    std::string counts_note;
    bool found = false;
    box.gateway().walk(page, {.fields = kNames, .select = &without_issues}, [&](const Row& row) {
        found = true;
        audit = R"("audit":)" + bounded_record(std::string(row.selected), budget / 4);
        counts_note = counts_only_note(row.fields);
        const RowField& list = row.fields[0];
        if (list.present() && list.raw.front() == '[') issues.assign(list.raw);
        return false;
    });
    if (!found)
        return tool_error("not_found", "no audit report with id \"" + report_id + "\" for client " +
                                           client_id + "; list_audits gives the report ids");

    // The report beside the issues counts against the same budget.
    RowWriter writer(client_id, "seo_reports", budget - std::min(budget / 4, audit.size()));
    const RowSelect select(nullptr, args);
    std::string scratch;
    std::int64_t matched = 0;
    std::string cursor;
    if (!issues.empty()) {
        static constexpr std::array<std::string_view, 1> kSeverity{"severity"};
        gateway::Page list{.body = R"({"data":)" + issues + "}",
                           .what = "issues of audit report " + report_id};
        box.gateway().walk(
            list, {.fields = kSeverity, .select = select.selection()}, [&](const Row& issue) {
                const RowField& level = issue.fields[0];
                if (!severity.empty() && !(level.is_string && base::iequals(level.text, severity)))
                    return true;
                const std::int64_t at = matched++;
                if (at < offset || !cursor.empty()) return true;  // before this page, or after it
                if (writer.count() >= limit ||
                    !writer.add(select.row(issue, "", scratch), issue.members_left_out))
                    cursor = box.issue_cursor(binding, at);
                return true;  // keep counting for total
            });
    }
    if (!counts_note.empty()) {
        writer.set_note(counts_note + issue_detail_pointer(box, client_id, report_id, ctx));
        // Inside "audit": the report says it has no issue detail.
        const bool bare = audit.ends_with("{}");
        audit.insert(audit.size() - 1,
                     bare ? R"("detail_available":false)" : R"(,"detail_available":false)");
    } else if (writer.count() == 0) {
        writer.set_note(severity.empty() ? "this audit report lists no issues"
                                         : "no issues of severity \"" + severity +
                                               "\" in this report; without severity, all of its "
                                               "issues");
    }
    return mcp::ToolResult::structured(writer.finish(matched, cursor, audit));
}

}  // namespace agency::tools
