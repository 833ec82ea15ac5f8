// Action tools over Client::act. Every call runs the same guard: idempotency key (replay the
// first result, no second POST), then the per-client credit limiter, then the POST; the
// gateway client itself never re-sends an action that may have created its record. Deploy and
// send are confirmed by a person first (elicitation, or a preview and a confirmation_id).
#include "tools/action_tools.hpp"

#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <variant>

#include <spdlog/spdlog.h>

#include "tools/registry.hpp"

namespace agency::tools {

namespace {

std::string text_arg(const json& args, const char* name) {
    auto it = args.find(name);
    return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// `args` less `name`: `args` itself when it has no such member (no copy on the usual path),
// else a copy kept in `storage`.
const json& without(const json& args, const char* name, json& storage) {
    if (!args.contains(name)) return args;
    storage = args;
    storage.erase(name);
    return storage;
}

std::string iso_time(std::int64_t unix_seconds) {
    const std::time_t t = static_cast<std::time_t>(unix_seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char out[32];
    std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

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

// The first row of a one-row read, or not_found naming what was looked up.
json first_row(Toolbox& box, const gateway::ReadQuery& query, const std::string& what,
               std::stop_token stop) {
    return row_json(first_row_text(box, query, stop), query.resource, what);
}

gateway::ReadQuery client_query(const std::string& client_id) {
    return {.resource = "clients", .filter_field = "id", .filter_value = client_id};
}

std::string unknown_client(const std::string& client_id) {
    return "unknown client_id " + client_id + "; list_clients shows the ids";
}

json client_record(Toolbox& box, const std::string& client_id, std::stop_token stop) {
    return first_row(box, client_query(client_id), unknown_client(client_id), stop);
}

// The client's record when it has auto_deploy true (anything else is off), nullopt when not.
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

// The gateway's draft is the tool's "drafted" (the spec's article status); other values pass.
std::string normalize_status(const json& data, const std::string& fallback) {
    auto it = data.find("status");
    if (it == data.end() || !it->is_string()) return fallback;
    const std::string status = it->get<std::string>();
    return status == "draft" ? "drafted" : status;
}

// A record id as text whatever its JSON type ("" when absent): shaping a result must not fail
// after the POST has already run.
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

// --- the guard every action tool runs ----------------------------------------------------------

// Does the tool's work and returns its result object; throws gateway::Error on failure.
using Execute = std::function<json(const json& args, mcp::RequestContext& ctx)>;

struct Guard {
    std::string tool;
    bool spends_credits = true;
};

// The answer to a call whose idempotency_key is already known: the first call's result, or why
// the key cannot be used (other arguments, or the first call still running).
mcp::ToolResult known_key_answer(const IdempotencyRecord& existing, const std::string& digest,
                                 const std::string& tool, const std::string& key,
                                 const std::string& principal) {
    if (existing.args_digest != digest)
        return tool_error("validation", "idempotency_key \"" + key +
                                            "\" was already used with other arguments for " +
                                            tool + "; use a new key for a new request, or repeat "
                                            "the first request's arguments exactly");
    if (existing.pending)
        return tool_error("in_progress", "the first call with idempotency_key \"" + key +
                                             "\" is still running; retry with the same key "
                                             "shortly");
    spdlog::info("{}: idempotency_key {} of {} replayed, no gateway request", tool, key,
                 principal);
    return existing.is_error ? mcp::ToolResult::text(existing.result, true)
                             : mcp::ToolResult::structured(existing.result);
}

mcp::ToolResult guarded_call(ActionRuntime& rt, const Guard& guard, const json& args,
                             mcp::RequestContext& ctx, const Execute& execute) {
    const std::string principal = principal_of(ctx);
    const std::string key = text_arg(args, "idempotency_key");
    json stripped;
    const json& call_args = without(args, "idempotency_key", stripped);

    bool claimed = false;
    if (!key.empty()) {
        const std::string digest = args_digest(call_args);
        auto existing = rt.store().claim_idempotency(principal, guard.tool, key, digest,
                                                     rt.settings().stale_claim);
        if (existing) return known_key_answer(*existing, digest, guard.tool, key, principal);
        claimed = true;
    }
    // A claim stays only once the call may have spent credits; otherwise the key is free again.
    auto release = [&] {
        if (claimed) rt.store().release_idempotency(principal, guard.tool, key);
        claimed = false;
    };
    auto settle = [&](bool is_error, const std::string& text) {
        if (claimed) rt.store().complete_idempotency(principal, guard.tool, key, is_error, text);
        claimed = false;
    };

    try {
        std::optional<CreditLimiter::Permit> permit;
        if (guard.spends_credits) {
            const std::string client_id = text_arg(args, "client_id");
            auto got = rt.credits().try_acquire(client_id);
            if (auto* refusal = std::get_if<CreditLimiter::Refusal>(&got)) {
                release();
                spdlog::warn("{}: refused for {}: {}", guard.tool, client_id, refusal->message);
                return tool_error("rate_limited", refusal->message,
                                  {{"retry_after_s", refusal->retry_after_s}});
            }
            permit.emplace(std::move(std::get<CreditLimiter::Permit>(got)));
        }
        const json result = execute(call_args, ctx);
        std::string text = result.dump();
        settle(false, text);
        return mcp::ToolResult::structured(std::move(text));
    } catch (const gateway::Error& e) {
        mcp::ToolResult error = tool_error(e);
        // The action may have run: a repeat with this key must not send it again.
        if (e.reason() == gateway::ErrorReason::outcome_unknown && !error.content.empty())
            settle(true, error.content[0].value("text", ""));
        else
            release();
        return error;
    } catch (...) {
        release();
        throw;
    }
}

// --- confirmed actions (deploy, send, and generation that publishes) ------------------------------------------------------------

constexpr std::chrono::seconds kConfirmationTtl{600};

// What a confirmed action would do, read before anything is sent.
struct Preview {
    std::string message;  // one sentence naming exactly what will happen
    json details;         // the same as fields, shown in the two-step preview
    bool needed = true;   // false: these arguments act without a confirmation
};

// Thrown by a preview when the action cannot run at all (a tool error with this reason).
struct Refused {
    std::string reason;
    std::string message;
};

struct ConfirmedDef {
    ToolSpec spec;
    // Reads what the action touches; throws gateway::Error (not_found, conflict...) when it
    // cannot run. Sends nothing.
    std::function<Preview(const json& args, mcp::RequestContext& ctx)> preview;
    // Runs the action (the one POST) and returns the tool's result object.
    std::function<json(const json& args, const Preview& preview, mcp::RequestContext& ctx)> run;
    // Instead of run: the whole tool call once confirmed (an action tool's guarded call).
    std::function<mcp::ToolResult(const json& args, mcp::RequestContext& ctx)> run_call;
};

std::string refusal_text(agency::tools::ConfirmOutcome outcome) {
    switch (outcome) {
        case ConfirmOutcome::unknown: return "is not known (never issued, or issued to another caller or tool)";
        case ConfirmOutcome::used: return "was already used; each confirmation_id acts once";
        case ConfirmOutcome::expired: return "has expired (they last 10 minutes)";
        case ConfirmOutcome::mismatch: return "was issued for other arguments";
        case ConfirmOutcome::accepted: break;
    }
    return "was accepted";
}

mcp::ToolResult run(ActionRuntime& rt, const ConfirmedDef& def, const json& args,
                    const Preview& preview, mcp::RequestContext& ctx) {
    if (def.run_call) return def.run_call(args, ctx);
    try {
        // Confirmed acts spend no credits but honour idempotency_key like every action.
        return guarded_call(rt, {def.spec.name, false}, args, ctx,
                            [&](const json& call_args, mcp::RequestContext& c) {
                                return def.run(call_args, preview, c);
                            });
    } catch (const Refused& r) {
        return tool_error(r.reason, r.message);
    }
}

// A known idempotency_key is answered before any preview or confirmation: a repeat gets the
// first result (nothing is sent again), a misuse its error, without asking anyone.
std::optional<mcp::ToolResult> replay_finished(ActionRuntime& rt, const std::string& tool,
                                               const json& call_args, mcp::RequestContext& ctx) {
    const std::string key = text_arg(call_args, "idempotency_key");
    if (key.empty()) return std::nullopt;
    json digest_args = call_args;
    digest_args.erase("idempotency_key");
    const std::string principal = principal_of(ctx);
    auto record = rt.store().find_idempotency(principal, tool, key);
    if (!record) return std::nullopt;
    return known_key_answer(*record, args_digest(digest_args), tool, key, principal);
}

// Confirmation before acting: a client with elicitation is asked (legacy: mid-call; modern:
// input_required); any other gets a preview and a single-use confirmation_id bound to the
// caller, the tool and the exact arguments, and acts only when called again with it.
mcp::ToolResult confirmed_call(ActionRuntime& rt, const ConfirmedDef& def, const json& args,
                               mcp::RequestContext& ctx) {
    const std::string& tool = def.spec.name;
    const std::string principal = principal_of(ctx);
    const std::string confirmation_id = text_arg(args, "confirmation_id");
    json stripped;
    const json& call_args = without(args, "confirmation_id", stripped);
    if (auto replay = replay_finished(rt, tool, call_args, ctx)) return std::move(*replay);

    std::optional<Preview> found;
    try {
        found = def.preview(call_args, ctx);
    } catch (const Refused& r) {
        return tool_error(r.reason, r.message);
    }
    const Preview& preview = *found;
    if (!preview.needed) return run(rt, def, call_args, preview, ctx);

    if (!confirmation_id.empty()) {
        const ConfirmOutcome outcome = rt.store().consume_confirmation(
            confirmation_id, principal, tool, args_digest(call_args));
        if (outcome != ConfirmOutcome::accepted) {
            // The confirmation_id is a secret: it never goes to the log.
            spdlog::warn("{}: a confirmation_id of {} was refused", tool, principal);
            return tool_error("confirmation",
                              "confirmation_id \"" + confirmation_id + "\" " +
                                  refusal_text(outcome) +
                                  "; nothing was done. Call " + tool +
                                  " without confirmation_id for a new preview.");
        }
        spdlog::info("{}: confirmed by {} with a confirmation_id", tool, principal);
        return run(rt, def, call_args, preview, ctx);
    }

    if (ctx.client_supports("elicitation")) {
        const json schema = {
            {"type", "object"},
            {"properties",
             {{"confirm",
               {{"type", "boolean"},
                {"title", def.spec.title + " now?"},
                {"description", preview.message}}}}},
            {"required", json::array({"confirm"})}};
        const json answer = ctx.ask("confirm", "elicitation/create",
                                    {{"message", preview.message}, {"requestedSchema", schema}});
        // The answer is the client's: any shape may arrive. Only a boolean true confirms;
        // "true" or 1 is refused as malformed rather than taken for a yes.
        auto field = [](const json& object, const char* key) -> const json* {
            if (!object.is_object()) return nullptr;
            auto it = object.find(key);
            return it == object.end() ? nullptr : &*it;
        };
        const json* action_field = field(answer, "action");
        const std::string action = action_field && action_field->is_string()
                                       ? action_field->get<std::string>()
                                       : std::string();
        const json* content = field(answer, "content");
        const json* confirm = content ? field(*content, "confirm") : nullptr;
        if (action == "accept" && confirm && !confirm->is_boolean()) {
            spdlog::info("{}: malformed confirmation answer from {}, nothing sent", tool, principal);
            return tool_error("invalid_answer",
                              "the client's confirmation answer is malformed: confirm must be "
                              "true or false, got " +
                                  confirm->dump(-1, ' ', false, json::error_handler_t::replace)
                                      .substr(0, 64) +
                                  ". Nothing was done; call the tool again to be asked again.");
        }
        const bool yes = action == "accept" && confirm && *confirm == true;
        if (!yes) {
            const std::string why = action == "accept" ? "not confirmed (confirm was not true)"
                                    : action.empty()   ? "not answered"
                                                       : action + "d";
            spdlog::info("{}: {} by {}, nothing sent", tool, why, principal);
            return tool_error(action == "cancel" ? "cancelled" : "declined",
                              "the user " + (action == "cancel" ? std::string("cancelled")
                                             : action == "decline" ? std::string("declined")
                                                                   : "did not confirm") +
                                  ": " + preview.message + " Nothing was done.",
                              {{"action", action.empty() ? json(nullptr) : json(action)}});
        }
        return run(rt, def, call_args, preview, ctx);
    }

    const Confirmation c =
        rt.store().create_confirmation(principal, tool, args_digest(call_args), kConfirmationTtl);
    json out = {{"ok", true},
                {"client_id", call_args.value("client_id", "")},
                {"status", "confirmation_required"},
                {"confirmation_id", c.id},
                {"expires_at", iso_time(c.expires_at)},
                {"message", preview.message + " Nothing was done yet: show this to the user and, "
                                              "once they agree, call " + tool +
                                              " again with the same arguments and this "
                                              "confirmation_id (single use, 10 minutes)."},
                {"preview", preview.details}};
    return mcp::ToolResult::structured(out.dump());
}

void add_confirmed(mcp::Server& server, const std::shared_ptr<ActionRuntime>& rt,
                   ConfirmedDef def) {
    def.spec.read_only = false;
    def.spec.destructive = true;
    def.spec.idempotent = false;
    def.spec.needs_write = true;
    def.spec.interactive = true;
    def.spec.output_schema = def.spec.name + ".output";
    def.spec.input_schema = def.spec.name + ".input";
    auto shared = std::make_shared<ConfirmedDef>(def);
    def.spec.handler = [rt, shared](const json& args, mcp::RequestContext& ctx) {
        return confirmed_call(*rt, *shared, args, ctx);
    };
    add_tool(server, std::move(def.spec));
}

// --- one gateway action per tool ---------------------------------------------------------------

struct ActionDef {
    ToolSpec spec;
    std::string id_field;        // the result's id member, e.g. article_id
    std::string default_status;  // when the gateway's data carries none
    bool spends_credits = true;
    // The POST fields besides client_id, from the arguments and what context supplies.
    std::function<json(Toolbox& box, const json& args, mcp::RequestContext& ctx)> fields;
    // Extra result members from the gateway's data (title, word_count, ...); may store things.
    std::function<void(ActionRuntime& rt, const json& args, const json& data, json& result)>
        finish;
    // When set: what acting would do, if a person must confirm it first (then the call goes
    // through confirmed_call, as deploy_article does); nullopt when these arguments need none.
    std::function<std::optional<Preview>(Toolbox& box, const json& args,
                                         mcp::RequestContext& ctx)>
        confirm_if;
};

void add_action(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                const std::shared_ptr<ActionRuntime>& rt, ActionDef def) {
    def.spec.read_only = false;
    def.spec.destructive = false;
    def.spec.needs_write = true;
    def.spec.output_schema = def.spec.name + ".output";
    def.spec.input_schema = def.spec.name + ".input";
    const Guard guard{def.spec.name, def.spends_credits};
    const std::string action = def.spec.gateway_action;
    def.spec.handler = [box, rt, guard, action, id_field = def.id_field,
                        default_status = def.default_status, fields = def.fields,
                        finish = def.finish](const json& args, mcp::RequestContext& ctx) {
        auto execute = [&](const json& call_args, mcp::RequestContext& c) {
            const std::string client_id = call_args.at("client_id").get<std::string>();
            const json body = fields ? fields(*box, call_args, c) : json::object();
            gateway::ActionResult r = box->gateway().act(action, client_id, body, c.stop);
            json data = r.data.is_object() ? std::move(r.data) : json::object();
            json result = {{"ok", true},
                           {"client_id", client_id},
                           {id_field, id_text(data)},
                           {"status", normalize_status(data, default_status)}};
            if (finish) finish(*rt, call_args, data, result);
            if (!result.contains("data")) result["data"] = std::move(data);
            if (r.recovered) result["note"] = r.note;
            return result;
        };
        return guarded_call(*rt, guard, args, ctx, execute);
    };
    if (def.confirm_if) {
        auto confirmed = std::make_shared<ConfirmedDef>();
        confirmed->spec.name = def.spec.name;
        confirmed->spec.title = def.spec.title;
        confirmed->preview = [box, confirm_if = def.confirm_if](const json& args,
                                                                mcp::RequestContext& ctx) {
            auto preview = confirm_if(*box, args, ctx);
            return preview ? std::move(*preview) : Preview{.message = {}, .details = {}, .needed = false};
        };
        confirmed->run_call = std::move(def.spec.handler);
        def.spec.handler = [rt, confirmed](const json& args, mcp::RequestContext& ctx) {
            return confirmed_call(*rt, *confirmed, args, ctx);
        };
        def.spec.interactive = true;  // may ask the user mid-call
    }
    add_tool(server, std::move(def.spec));
}

void set_title(json& result, const json& data, std::initializer_list<const char*> fields) {
    json title = first_string(data, fields);
    if (!title.is_null()) result["title"] = title;
}

}  // namespace

ActionRuntime::ActionRuntime(ActionSettings settings)
    : settings_(std::move(settings)),
      store_(std::make_shared<Store>(settings_.state_db)),
      credits_(settings_.credits),
      audits_(store_, settings_.audit_workers) {
    audits_.on_change([this](const Job&) {
        {
            std::lock_guard lock(audit_mutex_);
            ++audit_version_;
        }
        audit_changed_.notify_all();
    });
}

ActionRuntime::~ActionRuntime() { audits_.stop(); }

std::uint64_t ActionRuntime::audit_version() {
    std::lock_guard lock(audit_mutex_);
    return audit_version_;
}

void ActionRuntime::wait_audit_change(std::uint64_t& seen, std::stop_token stop,
                                      std::chrono::milliseconds at_most) {
    std::unique_lock lock(audit_mutex_);
    audit_changed_.wait_for(lock, stop, at_most, [&] { return audit_version_ != seen; });
    seen = audit_version_;
}

namespace {

// What get_audit_status and a finished audit task report for a job.
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

void register_action_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                           const std::shared_ptr<ActionRuntime>& rt) {
    std::map<std::string, std::string> actions_of;  // tool -> gateway action, for the filter
    auto action = [&](ActionDef def) {
        actions_of[def.spec.name] = def.spec.gateway_action;
        add_action(server, box, rt, std::move(def));
    };

    // run_seo_audit: a durable job; the worker POSTs.
    actions_of["run_seo_audit"] = "seo_audit";
    auto submit_audit = [rt](const json& args, mcp::RequestContext& ctx) {
        // Queuing spends nothing; the workers bound how many audits run at once.
        return guarded_call(
            *rt, {"run_seo_audit", false}, args, ctx,
            [&](const json& call_args, mcp::RequestContext& c) {
                const std::string client_id = call_args.at("client_id").get<std::string>();
                const std::string url = call_args.at("url").get<std::string>();
                const Job job = rt->audits().submit(client_id, principal_of(c), url);
                return json{{"ok", true}, {"client_id", client_id},
                            {"audit_id", job.id}, {"status", "queued"}, {"url", url}};
            });
    };
    add_tool(server,
             {.name = "run_seo_audit",
              .title = "Run SEO audit",
              .description = "Queues a site audit of url and returns at once with an audit_id; "
                             "poll get_audit_status. Repeating it for the same url updates the "
                             "same report. Called as an MCP task, the task ends when the audit "
                             "does, with its score and issues found.",
              .input_schema = "run_seo_audit.input",
              .output_schema = "run_seo_audit.output",
              .read_only = false,
              .destructive = false,
              .idempotent = true,
              .needs_write = true,
              .gateway_action = "seo_audit",
              .mapping = "POST action=seo_audit {url}, run by a background job (durable; "
                         "after a restart, a job that was running is first looked for in "
                         "resource=seo_reports and not re-sent when its report is there); "
                         "audit_id is the job's id. As an MCP task: the same job, the task's "
                         "result is its final status",
              .handler = submit_audit,
              .task_support = mcp::TaskSupport::optional,
              .task_handler =
                  [rt, submit_audit](const json& args, mcp::RequestContext& ctx) {
                      mcp::ToolResult queued = submit_audit(args, ctx);
                      if (queued.is_error) return queued;
                      const std::string id =
                          json::parse(queued.structured_text).value("audit_id", "");
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
                  }});

    add_tool(server,
             {.name = "get_audit_status",
              .title = "Get SEO audit status",
              .description = "Status of an audit you started with run_seo_audit: queued, "
                             "running, succeeded (score, issues found, report_id for "
                             "get_audit_issues), failed (the gateway's error) or cancelled.",
              .input_schema = "get_audit_status.input",
              .output_schema = "get_audit_status.output",
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
                      return tool_error("not_found",
                                        "no audit " + audit_id + " of yours for client_id " +
                                            client_id +
                                            "; audit ids come from run_seo_audit (finished "
                                            "reports: list_audits and get_audit_issues)");
                  return mcp::ToolResult::structured(audit_status_json(*job).dump());
              }});

    action({.spec = {.name = "refresh_backlinks",
                     .title = "Refresh backlinks",
                     .description = "Refreshes a client's backlink profile from the data "
                                    "provider; repeating it creates nothing new. Read the "
                                    "result with list_backlinks.",
                     .idempotent = true,
                     .gateway_action = "fetch_backlinks",
                     .mapping = "POST action=fetch_backlinks (no fields)"},
            .id_field = "profile_id",
            .default_status = "refreshed",
            .spends_credits = false});

    action({.spec = {.name = "generate_keyword_ideas",
                     .title = "Generate keyword ideas",
                     .description = "Generates keyword ideas with live volume and difficulty "
                                    "from a seed (default: the client's main service). Spends "
                                    "credits.",
                     .idempotent = false,
                     .gateway_action = "generate_keywords",
                     .mapping = "POST action=generate_keywords {seed}"},
            .id_field = "batch_id",
            .default_status = "generated",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                json body = json::object();
                if (args.contains("seed")) body["seed"] = args["seed"];
                return body;
            }});

    action({.spec = {.name = "generate_topical_map",
                     .title = "Generate topical map",
                     .description = "Builds a topical authority map (pillars and clusters) for "
                                    "a topic. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_topical_map",
                     .mapping = "POST action=generate_topical_map {topic}"},
            .id_field = "map_id",
            .default_status = "generated",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"topic", args.at("topic")}};
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"title", "topic"});
            }});

    action({.spec = {.name = "generate_article",
                     .title = "Generate article",
                     .description =
                         "Drafts a blog article for a keyword; returns article_id, title, word "
                         "count. Spends credits. Where the client has auto-deploy on, the "
                         "gateway publishes it at once, so a person confirms first, as for "
                         "deploy_article (elicitation, or a preview and a confirmation_id).",
                     .idempotent = false,
                     .gateway_action = "generate_blog",
                     .mapping = "POST action=generate_blog {keyword}; article_id = data.id, "
                                "title = data.post_title. Reads resource=clients first: with "
                                "auto_deploy true, the POST waits for confirmation"},
            .id_field = "article_id",
            .default_status = "drafted",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"keyword", args.at("keyword")}};
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"post_title", "title"});
                if (auto it = data.find("word_count"); it != data.end() && it->is_number())
                    result["word_count"] = *it;
                if (auto it = data.find("url"); it != data.end() && it->is_string())
                    result["url"] = *it;
            },
            .confirm_if = [](Toolbox& tb, const json& args,
                             mcp::RequestContext& ctx) -> std::optional<Preview> {
                const std::string client_id = args.at("client_id").get<std::string>();
                // The spec names no field; the sample gateway's is auto_deploy. Absent: off.
                const std::optional<json> found = auto_deploy_client(tb, client_id, ctx.stop);
                if (!found) return std::nullopt;
                const json& client = *found;
                const std::string keyword = args.at("keyword").get<std::string>();
                json site = first_string(client, {"website", "domain", "name"});
                json target = first_string(client, {"deployment_target"});
                const std::string where =
                    site.is_null() ? "client " + client_id : site.get<std::string>();
                return Preview{
                    .message = "Generate an article for \"" + keyword + "\" and publish it on " +
                               where +
                               (target.is_null() ? std::string()
                                                 : " via " + target.get<std::string>()) +
                               " at once: this client has auto-deploy on. It spends credits.",
                    .details = {{"action", "generate_blog"},
                                {"keyword", keyword},
                                {"site", site},
                                {"deployment_target", target},
                                {"auto_deploy", true}}};
            }});

    action({.spec = {.name = "optimize_page",
                     .title = "Optimize page",
                     .description = "Generates on-page optimisation recommendations for a URL, "
                                    "optionally for one keyword, as an SEO task. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "optimize_page",
                     .mapping = "POST action=optimize_page {url, keyword?}; task_id = the "
                                "seo_tasks record"},
            .id_field = "task_id",
            .default_status = "pending",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                json body{{"url", args.at("url")}};
                if (args.contains("keyword")) body["keyword"] = args["keyword"];
                return body;
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"title"});
            }});

    action({.spec = {.name = "index_url",
                     .title = "Submit URL for indexing",
                     .description = "Submits a URL to search engines for indexing (recorded as "
                                    "an SEO task).",
                     .idempotent = false,
                     .gateway_action = "index_url",
                     .mapping = "POST action=index_url {url}; task_id = the seo_tasks record"},
            .id_field = "task_id",
            .default_status = "submitted",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"url", args.at("url")}};
            }});

    action({.spec = {.name = "generate_press_release",
                     .title = "Generate press release",
                     .description = "Drafts a press release about a topic (the topic becomes "
                                    "its headline). Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_press_release",
                     .mapping = "POST action=generate_press_release {headline: topic}"},
            .id_field = "press_release_id",
            .default_status = "drafted",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"headline", args.at("topic")}};
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"headline"});
            }});

    action({.spec = {.name = "generate_gbp_post",
                     .title = "Generate business-profile post",
                     .description = "Drafts a Google Business Profile post about a topic. "
                                    "Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_gbp_post",
                     .mapping = "POST action=generate_gbp_post {topic}"},
            .id_field = "post_id",
            .default_status = "drafted",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"topic", args.at("topic")}};
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"topic"});
            }});

    action({.spec = {.name = "run_local_grid_scan",
                     .title = "Run local grid scan",
                     .description = "Runs a local rank grid for a keyword around the client's "
                                    "location (lat/lng from the client record, or from "
                                    "location_id, or given). Spends credits.",
                     .idempotent = false,
                     .gateway_action = "run_grid_search",
                     .mapping = "POST action=run_grid_search {keyword, lat, lng}; lat/lng from "
                                "lat+lng arguments, else resource=locations by location_id, "
                                "else resource=clients by id"},
            .id_field = "scan_id",
            .default_status = "completed",
            .fields = [](Toolbox& tb, const json& args, mcp::RequestContext& ctx) {
                json body{{"keyword", args.at("keyword")}};
                const bool has_lat = args.contains("lat");
                if (has_lat != args.contains("lng"))
                    throw gateway::Error(gateway::ErrorReason::validation,
                                         "pass both lat and lng, or neither (then the client's "
                                         "location is used)");
                if (has_lat) {
                    body["lat"] = args["lat"];
                    body["lng"] = args["lng"];
                    return body;
                }
                const std::string client_id = args.at("client_id").get<std::string>();
                const std::string location_id = text_arg(args, "location_id");
                const json row =
                    location_id.empty()
                        ? client_record(tb, client_id, ctx.stop)
                        : first_row(tb,
                                    {.resource = "locations",
                                     .client_id = client_id,
                                     .filter_field = "id",
                                     .filter_value = location_id},
                                    "unknown location_id " + location_id + " for client_id " +
                                        client_id + "; read_resource locations lists them",
                                    ctx.stop);
                const auto lat = number(row, "lat");
                const auto lng = number(row, "lng");
                if (!lat || !lng)
                    throw gateway::Error(gateway::ErrorReason::validation,
                                         "no coordinates are on record for " +
                                             (location_id.empty() ? "client " + client_id
                                                                  : "location " + location_id) +
                                             "; pass lat and lng, or a location_id");
                body["lat"] = *lat;
                body["lng"] = *lng;
                return body;
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"keyword"});
            }});

    action({.spec = {.name = "analyze_llm_visibility",
                     .title = "Analyze AI answer visibility",
                     .description = "Checks whether AI answer engines mention the client. "
                                    "brand_name comes from the client record; the default prompt "
                                    "asks for the best providers of its industry in its city. "
                                    "Spends credits.",
                     .idempotent = false,
                     .gateway_action = "run_llm_visibility",
                     .mapping = "POST action=run_llm_visibility {prompt, brand_name}; brand_name "
                                "from resource=clients (brand_name, else name); prompt given or "
                                "\"Who are the best <industry> providers in <city>, <state>?\""},
            .id_field = "report_id",
            .default_status = "completed",
            .fields = [](Toolbox& tb, const json& args, mcp::RequestContext& ctx) {
                const json client =
                    client_record(tb, args.at("client_id").get<std::string>(), ctx.stop);
                json brand = first_string(client, {"brand_name", "name"});
                if (brand.is_null())
                    throw gateway::Error(gateway::ErrorReason::upstream,
                                         "the client record carries no brand_name or name");
                std::string prompt = text_arg(args, "prompt");
                if (prompt.empty()) {
                    const std::string industry = client.value("industry", "");
                    const std::string city = client.value("city", "");
                    const std::string state = client.value("state", "");
                    prompt = "Who are the best " + (industry.empty() ? "local" : industry) +
                             " providers" +
                             (city.empty() ? std::string()
                                           : " in " + city + (state.empty() ? "" : ", " + state)) +
                             "?";
                }
                return json{{"prompt", prompt}, {"brand_name", brand}};
            },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result) {
                set_title(result, data, {"prompt"});
            }});

    action({.spec = {.name = "generate_outreach_email",
                     .title = "Draft outreach email",
                     .description = "Drafts a backlink outreach email to a prospect site (its URL "
                                    "is the gateway's prospectUrl) and stores it; returns "
                                    "email_id, recipient and subject. Never sends. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_outreach_email",
                     .mapping = "POST action=generate_outreach_email {prospectUrl: prospect}; "
                                "the draft (email_to, subject, html) is kept in the server's "
                                "store under email_id"},
            .id_field = "email_id",
            .default_status = "drafted",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"prospectUrl", args.at("prospect")}};
            },
            .finish = [](ActionRuntime& runtime, const json& args, const json& data, json& result) {
                auto text = [&](const char* field) {
                    json v = first_string(data, {field});
                    return v.is_null() ? std::string() : v.get<std::string>();
                };
                Draft draft{.client_id = args.at("client_id").get<std::string>(),
                            .recipient = text("email_to"),
                            .subject = text("subject"),
                            .html = text("html"),
                            .gateway_id = id_text(data),
                            .prospect_url = args.at("prospect").get<std::string>()};
                draft = runtime.store().create_draft(std::move(draft));
                result["email_id"] = draft.id;
                result["status"] = "drafted";
                result["recipient"] = draft.recipient;
                result["title"] = draft.subject;
                json shown = data;
                shown.erase("html");  // kept in the store; the send step shows it for confirmation
                result["data"] = shown;
            }});

    // deploy_article and send_prospect_email act on the outside world: confirmation first.
    actions_of["deploy_article"] = "deploy_blog";
    add_confirmed(
        server, rt,
        {.spec = {.name = "deploy_article",
                  .title = "Deploy article",
                  .description =
                      "Publishes a drafted article to the client's site. Asks for confirmation "
                      "first: by elicitation when the client supports it, otherwise the first "
                      "call returns a preview and a confirmation_id, and only a second call with "
                      "the same arguments and that confirmation_id deploys.",
                  .gateway_action = "deploy_blog",
                  .mapping = "POST action=deploy_blog {post_id: article_id} after confirmation; "
                             "the preview reads resource=blogs by id and resource=clients"},
         .preview = [box](const json& args, mcp::RequestContext& ctx) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string article_id = args.at("article_id").get<std::string>();
             const json article = first_row(
                 *box,
                 {.resource = "blogs",
                  .client_id = client_id,
                  .filter_field = "id",
                  .filter_value = article_id},
                 "unknown article_id " + article_id + " for client_id " + client_id +
                     "; list_articles shows the ids",
                 ctx.stop);
             const json client = client_record(*box, client_id, ctx.stop);
             json title = first_string(article, {"post_title", "title", "keyword"});
             json site = first_string(client, {"website", "domain", "name"});
             json target = first_string(article, {"deployment_target"});
             if (target.is_null()) target = first_string(client, {"deployment_target"});
             json status = first_string(article, {"status"});
             const std::string title_text = title.is_null() ? article_id : title.get<std::string>();
             std::string message = "Deploy article \"" + title_text + "\" (" + article_id +
                                   ") to " +
                                   (site.is_null() ? "client " + client_id
                                                   : site.get<std::string>()) +
                                   (target.is_null() ? std::string()
                                                     : " via " + target.get<std::string>()) +
                                   ".";
             if (status.is_string() && status == "published")
                 message += " It is already published; deploying again republishes it.";
             return Preview{message,
                            {{"action", "deploy_blog"},
                             {"article_id", article_id},
                             {"title", title},
                             {"site", site},
                             {"deployment_target", target},
                             {"current_status", status}}};
         },
         .run = [box](const json& args, const Preview& preview, mcp::RequestContext& ctx) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string article_id = args.at("article_id").get<std::string>();
             const gateway::ActionResult r = box->gateway().act(
                 "deploy_blog", client_id, {{"post_id", article_id}}, ctx.stop);
             const json data = r.data.is_object() ? r.data : json::object();
             json result = {{"ok", true},
                            {"client_id", client_id},
                            {"article_id", article_id},
                            {"status", normalize_status(data, "published")}};
             json title = first_string(data, {"post_title", "title"});
             if (title.is_null()) title = preview.details.value("title", json());
             if (title.is_string()) result["title"] = title;
             if (auto it = data.find("url"); it != data.end() && it->is_string())
                 result["url"] = *it;
             result["data"] = data;
             // Published after all: the answer says how that is known (sent once).
             if (r.recovered) result["note"] = r.note;
             return result;
         }});

    actions_of["send_prospect_email"] = "send_prospect_email";
    add_confirmed(
        server, rt,
        {.spec = {.name = "send_prospect_email",
                  .title = "Send outreach email",
                  .description =
                      "Sends a draft from generate_outreach_email (email_id) to its recipient, "
                      "once. Confirmation first: by elicitation when the client supports it, "
                      "else the first call returns a preview and a confirmation_id; a second "
                      "call with the same arguments and that confirmation_id sends.",
                  .gateway_action = "send_prospect_email",
                  .mapping = "POST action=send_prospect_email {to, subject, html, email_id} from "
                             "the stored draft, after confirmation; the draft is then marked "
                             "sent"},
         .preview = [rt](const json& args, mcp::RequestContext&) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string email_id = args.at("email_id").get<std::string>();
             auto draft = rt->store().draft(email_id);
             if (!draft || draft->client_id != client_id)
                 throw Refused{"not_found",
                                      "unknown email_id " + email_id + " for client_id " +
                                          client_id + "; generate_outreach_email returns it"};
             if (draft->status != "draft")
                 throw Refused{"already_sent",
                                      "email " + email_id + " to " + draft->recipient +
                                          " was already sent; nothing was sent again"};
             if (draft->recipient.empty())
                 throw Refused{"validation", "draft " + email_id + " has no recipient address"};
             return Preview{"Send the email \"" + draft->subject + "\" to " + draft->recipient +
                                " (draft " + email_id + ").",
                            {{"action", "send_prospect_email"},
                             {"email_id", email_id},
                             {"to", draft->recipient},
                             {"subject", draft->subject},
                             {"prospect_url", draft->prospect_url}}};
         },
         .run = [box, rt](const json& args, const Preview&, mcp::RequestContext& ctx) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string email_id = args.at("email_id").get<std::string>();
             // Re-read: another call may have sent it since the preview.
             auto draft = rt->store().draft(email_id);
             if (!draft || draft->status != "draft")
                 throw Refused{"already_sent", "email " + email_id + " was already sent"};
             json body = {{"to", draft->recipient},
                          {"subject", draft->subject},
                          {"html", draft->html}};
             if (!draft->gateway_id.empty()) body["email_id"] = draft->gateway_id;
             gateway::ActionResult r;
             try {
                 r = box->gateway().act("send_prospect_email", client_id, body, ctx.stop);
             } catch (const gateway::Error& e) {
                 if (e.reason() != gateway::ErrorReason::outcome_unknown) throw;
                 // It may have gone out: an email sent twice cannot be taken back, so the draft
                 // is not offered for sending again.
                 rt->store().mark_draft_sent(email_id);
                 throw gateway::Error(e.reason(),
                                      std::string(e.what()) + " The draft " + email_id +
                                          " is marked sent so that it cannot go out twice; "
                                          "read_resource backlink_outreach shows whether it "
                                          "was sent.",
                                      e.http_status(), e.gateway_error(), e.status_code(),
                                      e.data());
             }
             rt->store().mark_draft_sent(email_id);
             json data = r.data.is_object() ? r.data : json::object();
             data.erase("html");
             json result{{"ok", true},
                         {"client_id", client_id},
                         {"email_id", email_id},
                         {"status", normalize_status(data, "sent")},
                         {"recipient", draft->recipient},
                         {"title", draft->subject},
                         {"data", data}};
             if (r.recovered) result["note"] = r.note;
             return result;
         }});

    // Hide a tool whose gateway action the live deployment lacks. discovery() is cached in the
    // client, so this costs a lookup per tools/list; a failing discovery hides nothing (the call
    // reports the failure itself).
    server.set_tool_filter([box, actions_of](const mcp::ToolDef& def) {
        auto it = actions_of.find(def.name);
        if (it == actions_of.end()) return true;
        try {
            return box->gateway().discovery()->find_action(it->second) != nullptr;
        } catch (const std::exception& e) {
            spdlog::debug("discovery unavailable while listing tools: {}", e.what());
            return true;
        }
    });

    rt->audits().start(box);
}

}  // namespace agency::tools
