// Action tools over Client::act: the shared state (ActionRuntime), the readers and shapers the
// families share, and the one registration loop that turns each entry into a tool whose calls
// run the pipeline (tools/pipeline/pipeline.hpp). The entries live in audit_tools.cpp,
// generation_tools.cpp and draft_tools.cpp.
#include "tools/actions/action_tools.hpp"
#include "server/mcp_server.hpp"
#include "tools/kit/views.hpp"
#include "tools/pipeline/view_approval.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <span>

#include "base/log.hpp"

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "tools/actions/action_internal.hpp"

namespace agency::tools {

namespace {

// The first row of a one-row read as the page holds it ("" when there is none), with the
// fields named in `fields` read in the same pass. One parse of the page: the gateway's walker.
std::string first_row_text(Toolbox& box, gateway::ReadQuery query, std::stop_token stop,
                           std::span<const std::string_view> fields = {},
                           std::vector<std::string>* values = nullptr) {
    query.limit = 1;
    gateway::Page page = box.gateway().read_body(query, stop);
    std::string text;
    box.gateway().walk(page, {.fields = fields}, [&](const Row& row) {
        text.assign(row.json);
        if (values != nullptr)
            for (const RowField& f : row.fields) values->emplace_back(f.raw);
        return false;
    });
    return text;
}

// A row's text as nlohmann JSON; not_found (naming `what`) when there was no row.
json row_json(const std::string& text, const std::string& resource, const std::string& what) {
    if (text.empty()) throw gateway::Error(gateway::ErrorReason::not_found, what);
    json row = json::parse(text, nullptr, false);
    if (!row.is_object())
        throw gateway::Error(gateway::ErrorReason::upstream,
                             "the gateway sent a malformed answer reading " + resource);
    return row;
}

gateway::ReadQuery client_query(const std::string& client_id) {
    return {.resource = "clients", .filter_field = "id", .filter_value = client_id};
}

std::string unknown_client(const std::string& client_id) {
    return "unknown client_id " + client_id + "; list_clients shows the ids";
}

}  // namespace

json first_row(Toolbox& box, const gateway::ReadQuery& query, const std::string& what,
               std::stop_token stop) {
    return row_json(first_row_text(box, query, stop), query.resource, what);
}

json client_record(Toolbox& box, const std::string& client_id, std::stop_token stop) {
    return first_row(box, client_query(client_id), unknown_client(client_id), stop);
}

// generate_article asks this on every call: the flag is read in the walk of the page, and the
// record becomes nlohmann JSON only when it is on, for the preview. Errors as client_record's.
std::optional<json> auto_deploy_client(Toolbox& box, const std::string& client_id,
                                       std::stop_token stop) {
    static constexpr std::string_view kFlag[] = {"auto_deploy"};
    std::vector<std::string> flag;
    const std::string text = first_row_text(box, client_query(client_id), stop, kFlag, &flag);
    const bool on = !flag.empty() && flag[0] == "true";
    if (!text.empty() && !on) return std::nullopt;
    return row_json(text, "clients", unknown_client(client_id));
}

std::optional<double> number(const json& row, const char* field) {
    auto it = row.find(field);
    if (it == row.end()) return std::nullopt;
    if (it->is_number()) return it->get<double>();
    return std::nullopt;
}

std::string normalize_status(const json& data, const std::string& fallback) {
    auto it = data.find("status");
    if (it == data.end() || !it->is_string()) return fallback;
    const std::string status = it->get<std::string>();
    return status == "draft" ? "drafted" : status;
}

// Shaping a result must not fail after the POST has already run.
std::string id_text(const json& data) {
    auto it = data.find("id");
    if (it == data.end() || it->is_null()) return {};
    return it->is_string() ? it->get<std::string>() : it->dump();
}

json first_string(const json& data, std::initializer_list<const char*> fields) {
    for (const char* f : fields)
        if (auto it = data.find(f); it != data.end() && it->is_string()) return *it;
    return nullptr;
}

void set_title(json& result, const json& data, std::initializer_list<const char*> fields) {
    json title = first_string(data, fields);
    if (!title.is_null()) result["title"] = title;
}

namespace {

// An entry's result object from the gateway's record `data` (the one POST's answer, or the
// record a lost call's check found).
struct PostShape {
    std::shared_ptr<ActionRuntime> rt;
    std::string id_field;
    std::string default_status;
    decltype(ActionEntry::finish) finish;

    json operator()(const json& args, const std::string& client_id, json data,
                    const Preview& preview, mcp::RequestContext& ctx) const {
        if (!data.is_object()) data = json::object();
        json result = {{"ok", true},
                       {"client_id", client_id},
                       {id_field, id_text(data)},
                       {"status", normalize_status(data, default_status)}};
        // What the confirmation said acting would do (generate_article: publish at once).
        if (preview.needed && preview.details.value("auto_deploy", false))
            result["auto_deploy"] = true;
        if (finish) finish(*rt, args, data, result, ctx);
        if (!result.contains("data")) result["data"] = std::move(data);
        return result;
    }
};

// The one POST of an entry without its own execute: fields → act → the result object.
std::function<json(const json&, const Preview&, mcp::RequestContext&)> one_post(
    const std::shared_ptr<Toolbox>& box, const std::string& action, const ActionEntry& entry,
    const PostShape& shape) {
    return [box, action, fields = entry.fields, shape](const json& args, const Preview& preview,
                                                       mcp::RequestContext& ctx) {
        const std::string client_id = args.at("client_id").get<std::string>();
        const json body = fields ? fields(*box, args, ctx) : json::object();
        gateway::ActionResult r = box->gateway().act(action, client_id, body, ctx.stop);
        json result = shape(args, client_id, std::move(r.data), preview, ctx);
        if (r.recovered) result["note"] = r.note;
        return result;
    };
}

// The check of a lost call of that one POST: the same fields, read back.
decltype(ActionCall::find_lost) lost_post(const std::shared_ptr<Toolbox>& box,
                                          const std::string& action, const ActionEntry& entry,
                                          const PostShape& shape) {
    return [box, action, fields = entry.fields, shape](const json& args,
                                                       std::chrono::system_clock::time_point since,
                                                       mcp::RequestContext& ctx) {
        const std::string client_id = args.at("client_id").get<std::string>();
        const json body = fields ? fields(*box, args, ctx) : json::object();
        gateway::LostAction found =
            box->gateway().find_lost_action(action, client_id, body, since, ctx.stop);
        LostCall lost{.detail = found.detail, .hint = found.hint};
        if (found.ran) {
            lost.result =
                shape(args, client_id, std::move(found.row), Preview{.needed = false}, ctx);
            (*lost.result)["note"] = lost_call_note(found.detail);
        }
        return lost;
    };
}

}  // namespace

std::string lost_call_note(const std::string& detail) {
    return "the first call with this idempotency_key ended without its answer being kept; "
           "checking the gateway " +
           detail + ": it ran once and was not sent again";
}

namespace {

// An action entry as a tool: the annotations every action shares, the schema names derived
// from the tool's name, and a handler that runs the pipeline.
ToolSpec action_spec(const std::shared_ptr<Toolbox>& box, const std::shared_ptr<ActionRuntime>& rt,
                     ActionEntry entry) {
    ToolSpec spec = std::move(entry.spec);
    spec.read_only = false;
    spec.needs_write = true;
    spec.interactive = static_cast<bool>(entry.preview);  // may ask the user mid-call
    if (entry.preview) spec.view = kApproveView;          // a person approves it, in the view too
    if (entry.spends_credits) {  // said in words and marked for hosts (tools/list `_meta`)
        spec.billable = true;
        if (spec.description.find("Spends credits.") == std::string::npos)
            spec.description += " Spends credits.";
    }
    const PostShape shape{rt, entry.id_field, entry.default_status, entry.finish};
    const bool own_execute = static_cast<bool>(entry.execute);
    auto call = std::make_shared<ActionCall>(
        ActionCall{.tool = spec.name,
                   .box = box,
                   .title = spec.title,
                   .record_field = entry.id_field,
                   .spends_credits = entry.spends_credits,
                   .preview = std::move(entry.preview),
                   .execute = own_execute ? std::move(entry.execute)
                                          : one_post(box, spec.gateway_action, entry, shape),
                   .find_lost = own_execute ? std::move(entry.find_lost)
                                            : lost_post(box, spec.gateway_action, entry, shape)});
    spec.handler = [rt, call](const json& args, mcp::RequestContext& ctx) {
        return run_action(*rt, *call, args, ctx);
    };
    spec.on_refused = [rt, call](const json& args, mcp::RequestContext& ctx,
                                 const mcp::ToolResult& refusal) {
        record_refusal(*rt, call->tool, call->record_field, args, ctx, refusal);
    };
    return spec;
}

}  // namespace

ToolCatalog register_action_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                                  const std::shared_ptr<ActionRuntime>& rt) {
    std::vector<ToolSpec> specs = audit_tools(box, rt);
    for (ActionEntry& e : generation_tools(box))
        specs.push_back(action_spec(box, rt, std::move(e)));
    for (ActionEntry& e : draft_tools(box, rt)) specs.push_back(action_spec(box, rt, std::move(e)));
    std::map<std::string, Handler> approvable;  // the approval view's tools: view_decide's
    for (const ToolSpec& spec : specs)
        if (spec.view == kApproveView) approvable[spec.name] = spec.handler;
    specs.push_back(view_decide_tool(box, std::move(approvable)));

    std::map<std::string, std::string> actions_of;  // tool -> gateway action, for the filter
    ToolCatalog docs;
    for (ToolSpec& spec : specs) {
        if (!spec.gateway_action.empty()) actions_of[spec.name] = spec.gateway_action;
        docs.push_back(add_tool(server, std::move(spec)));
    }

    // Hide a tool whose gateway action the live deployment lacks. discovery() is cached in the
    // client, so this costs a lookup per tools/list; a failing discovery hides nothing (the call
    // reports the failure itself).
    server.set_tool_filter([box, actions_of](const mcp::ToolDef& def) {
        auto it = actions_of.find(def.name);
        if (it == actions_of.end()) return true;
        try {
            return box->gateway().discovery()->find_action(it->second) != nullptr;
        } catch (const std::exception& e) {
            log::debug("discovery unavailable while listing tools: {}", e.what());
            return true;
        }
    });

    // A key without the write scope: the action tools leave tools/list (a call still hears
    // why, reason scope), and legacy sessions are told the list changed.
    server.set_tool_list_filter([box](const mcp::ToolDef& def) {
        return std::find(def.required_scopes.begin(), def.required_scopes.end(), "write") ==
                   def.required_scopes.end() ||
               !write_scope_refusal(*box, def.name);
    });
    box->gateway().on_write_denied([&server] {
        log::info(
            "the gateway key lacks the write scope: telling clients the tool list "
            "changed");
        server.notify_tools_changed();
    });
    server.on_shutdown([box] { box->gateway().on_write_denied({}); });

    // Jobs a previous run left are picked up when the server begins its work: not by a
    // process that a client starts only to probe server/discover.
    server.on_begin_work([rt, box] { rt->audits().start(box); });
    return docs;
}

}  // namespace agency::tools
