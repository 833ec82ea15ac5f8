// Audit tools: run_seo_audit queues a durable audit job (as an MCP task, the task follows the
// job to its end); get_audit_status reads the job table.
#include <cctype>
#include <chrono>

#include "tools/actions/action_internal.hpp"

namespace agency::tools {

// What get_audit_status, a finished audit task and an audit job's resource report for a job.
json audit_status_json(const Job& job) {
    json out = {{"ok", job.status != "failed" && job.status != "cancelled"},
                {"client_id", job.client_id},
                {"audit_id", job.id},
                {"status", job.status},
                {"url", job.args.value("url", "")},
                {"created_at", iso_time(job.created_at)},
                {"updated_at", iso_time(job.updated_at)}};
    if (job.result.is_object())
        for (const auto& [k, v] : job.result.items())
            if (k != "url") out[k] = v;
    if (job.error.is_object()) out["error"] = job.error;
    return out;
}

namespace {

// A URL's host, lower case, without "www." or a port; "" when it has none.
std::string host_of(std::string_view url) {
    if (const auto scheme = url.find("://"); scheme != std::string_view::npos)
        url.remove_prefix(scheme + 3);
    url = url.substr(0, url.find_first_of("/?#"));
    if (const auto at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
    url = url.substr(0, url.find(':'));
    std::string host(url);
    for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (host.starts_with("www.")) host.erase(0, 4);
    return host;
}

// A warning when `url` lies outside the client's website (another site's audit would land in
// this client's reports); "" when it is the site or one of its subdomains, or the client's
// record names no website. A read that fails flags nothing: the audit goes ahead as asked.
std::string outside_site_warning(Toolbox& box, const std::string& client_id, const std::string& url,
                                 std::stop_token stop) {
    json client;
    try {
        client = client_record(box, client_id, stop);
    } catch (const Refused&) {
        return "";
    } catch (const gateway::Error&) {
        return "";
    }
    const json site = first_text(client, {"website", "domain"});
    if (!site.is_string()) return "";
    const std::string home = host_of(site.get<std::string>());
    const std::string host = host_of(url);
    if (home.empty() || host.empty() || host == home || host.ends_with("." + home)) return "";
    return "the url's host " + host.substr(0, 120) + " is not the client's website (" +
           home.substr(0, 120) +
           "): this audit of another site is queued as asked and its "
           "report will be filed under client " +
           client_id;
}

// A task's wait for its audit job: progress as the job moves, its final status as the result.
mcp::ToolResult await_audit(ActionRuntime& rt, const std::string& audit_id,
                            mcp::RequestContext& ctx) {
    std::string last;
    std::uint64_t seen = rt.audit_version();  // read before the job: no change is missed
    while (true) {
        auto job = rt.store().job(audit_id);
        if (!job) return tool_error("not_found", "the audit job " + audit_id + " is gone");
        if (job->status != last) {
            last = job->status;
            const double step = last == "queued" ? 0 : last == "running" ? 1 : 2;
            ctx.progress(step, 2, "audit " + last);
        }
        if (last != "queued" && last != "running") {
            json out = audit_status_json(*job);
            if (last == "failed")
                return tool_error("gateway", "the audit failed",
                                  out.value("error", json::object()));
            if (last == "cancelled")
                return tool_error("cancelled", "the audit " + audit_id + " was cancelled");
            return mcp::ToolResult::structured(out.dump());
        }
        // Woken by the job runner; the timeout covers a job finished by another process
        // sharing the state file.
        rt.wait_audit_change(seen, ctx.stop, std::chrono::seconds(1));
        if (ctx.stop.stop_requested())
            return tool_error("cancelled", "stopped waiting for audit " + audit_id);
    }
}

}  // namespace

std::vector<ToolSpec> audit_tools(const std::shared_ptr<Toolbox>& box,
                                  const std::shared_ptr<ActionRuntime>& rt) {
    std::vector<ToolSpec> tools;
    // run_seo_audit: a durable job; the worker POSTs. Queuing spends nothing; the workers bound
    // how many audits run at once.
    auto submit = std::make_shared<ActionCall>(ActionCall{
        .tool = "run_seo_audit",
        .box = box,  // a key known to lack write is refused here, never queued
        .record_field = "audit_id",
        .spends_credits = false,
        .execute = [rt, box](const json& args, const Preview&, mcp::RequestContext& ctx) {
            const std::string client_id = args.at("client_id").get<std::string>();
            const std::string url = args.at("url").get<std::string>();
            const std::string warning = outside_site_warning(*box, client_id, url, ctx.stop);
            const Job job = rt->audits().submit(client_id, principal_of(ctx), url);
            json out{{"ok", true},
                     {"client_id", client_id},
                     {"audit_id", job.id},
                     {"status", "queued"},
                     {"url", url}};
            if (!warning.empty()) out["warning"] = warning;
            return out;
        }});
    auto submit_audit = [rt, submit](const json& args, mcp::RequestContext& ctx) {
        return run_action(*rt, *submit, args, ctx);
    };
    tools.push_back(
        {.name = "run_seo_audit",
         .toolset = "audits",
         .title = "Run SEO audit",
         .description = "Queues a site audit of url and returns an audit_id at once; poll "
                        "get_audit_status (or call it as an MCP task, which ends with the audit). "
                        "Repeating it for the same url updates the same report.",
         .read_only = false,
         .destructive = false,
         .idempotent = true,
         .needs_write = true,
         .gateway_action = "seo_audit",
         .mapping = "POST action=seo_audit {url}, run by a background job (durable; "
                    "after a restart, a job that was running is first looked for in "
                    "resource=seo_reports and not re-sent when its report is there); "
                    "audit_id is the job's id. As an MCP task: the same job, the task's "
                    "result is its final status. The report's newest date (any member "
                    "named *_at, *_date, date) is compared with the audit's request; an "
                    "answer without one is dated by one GET resource=seo_reports "
                    "filter_field=id",
         .handler = submit_audit,
         .task_support = mcp::TaskSupport::optional,
         .task_handler =
             [rt, submit_audit](const json& args, mcp::RequestContext& ctx) {
                 mcp::ToolResult queued = submit_audit(args, ctx);
                 if (queued.is_error) return queued;
                 const std::string id = json::parse(queued.structured_text).value("audit_id", "");
                 ctx.set_task_resume({{"audit_id", id}});
                 return await_audit(*rt, id, ctx);
             },
         .resume_task =
             [rt](const json& resume, const json&, mcp::RequestContext& ctx) {
                 // The job itself survives in the store and is picked up by the workers.
                 return await_audit(*rt, resume.value("audit_id", ""), ctx);
             },
         .on_cancel =
             [rt](const json& resume) {
                 // A queued audit is never sent; a running one's POST is already out.
                 rt->audits().cancel(resume.value("audit_id", ""));
             },
         .on_refused =
             [rt](const json& args, mcp::RequestContext& ctx, const mcp::ToolResult& refusal) {
                 record_refusal(*rt, "run_seo_audit", "audit_id", args, ctx, refusal);
             }});

    tools.push_back(
        {.name = "get_audit_status",
         .toolset = "audits",
         .title = "Get SEO audit status",
         .description = "Gets the status of an audit you started with run_seo_audit: queued, "
                        "running, succeeded (score, issues found, report_id for "
                        "get_audit_issues, the report's date), failed (the gateway's "
                        "error) or cancelled.",
         .open_world = false,
         .mapping = "the server's job table (no gateway request)",
         .handler = [rt](const json& args, mcp::RequestContext& ctx) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string audit_id = args.at("audit_id").get<std::string>();
             auto job = rt->store().job(audit_id);
             // Another caller's job gets the answer an unknown id gets: its existence
             // is not revealed. A gateway report id is no job either.
             if (!job || job->kind != "seo_audit" || job->client_id != client_id ||
                 job->principal != principal_of(ctx))
                 return tool_error("not_found", "no audit " + audit_id +
                                                    " of yours for client_id " + client_id +
                                                    "; audit ids come from run_seo_audit (finished "
                                                    "reports: list_audits and get_audit_issues)");
             return mcp::ToolResult::structured(audit_status_json(*job).dump());
         }});
    return tools;
}

}  // namespace agency::tools
