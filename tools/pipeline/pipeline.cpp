// The gate every tool call passes, in one place: the call stages around every handler
// (with_call_stages) and an action's stages (run_action): key scope, replay, budget,
// confirmation, idempotency, credits, then the one POST and its write log row.
#include "tools/pipeline/pipeline.hpp"
#include "tools/pipeline/view_approval.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <variant>

#include "base/log.hpp"

#include "tools/kit/tool_metrics.hpp"
#include "tools/kit/untrusted_results.hpp"
#include "tools/pipeline/action_runtime.hpp"
#include "tools/pipeline/budgets.hpp"
#include "tools/pipeline/client_scope.hpp"
#include "tools/pipeline/write_log.hpp"

namespace agency::tools {

namespace {

// Shape stage for failures: what the handler threw, as a tool error.
template <typename Call>
mcp::ToolResult failures_as_tool_errors(const Call& call) {
    try {
        return call();
    } catch (const gateway::Error& e) {
        return tool_error(e);
    } catch (const state::StoreError& e) {
        return state_unavailable(e);
    }
}

// `args` less `name`: `args` itself when it has no such member (no copy on the usual path),
// else a copy kept in `storage`.
const json& without(const json& args, const char* name, json& storage) {
    if (!args.contains(name)) return args;
    storage = args;
    storage.erase(name);
    return storage;
}

// Whether a claim that kept no result is past its lease: its call can no longer be running,
// so it ended without storing what happened (its process stopped, or the store failed).
bool past_lease(const ActionRuntime& rt, const IdempotencyRecord& record) {
    return record.pending &&
           rt.clock().unix_s() - record.created_at > rt.settings().stale_claim.count();
}

// A lost call (past_lease): the record it made, found at the gateway, becomes the key's result;
// when none is found the key's result is outcome_unknown with how to check. Nothing is sent
// again. A check that could not read the gateway settles nothing: the next repeat checks again.
mcp::ToolResult resolve_lost_call(ActionRuntime& rt, const ActionCall& call,
                                  const IdempotencyRecord& first, const json& call_args,
                                  const std::string& key, mcp::RequestContext& ctx,
                                  WriteTrail& trail) {
    const std::string principal = principal_of(ctx);
    const std::string lost = "the first call with idempotency_key \"" + key + "\" (at " +
                             iso_time(first.created_at) + ") ended without its answer being kept";
    LostCall found{.detail = "no check of " + call.tool + "'s record is known",
                   .hint = "read what it writes"};
    if (call.find_lost) {
        try {
            found = call.find_lost(call_args,
                                   std::chrono::system_clock::from_time_t(first.created_at), ctx);
        } catch (const gateway::Error& e) {
            if (e.reason() == gateway::ErrorReason::cancelled) return tool_error(e);
            return tool_error("outcome_unknown",
                              lost + ", and checking the gateway for its record failed (" +
                                  e.what() +
                                  "). Nothing was sent; repeat with the same key "
                                  "to check again.",
                              {{"first_called_at", iso_time(first.created_at)}});
        }
    }
    trail.replayed = true;  // answered for the first call: this one sends nothing
    if (found.result) {
        log::warn("{}: idempotency_key {} of {}: {}; its record was found at the gateway",
                  call.tool, key, principal, lost);
        std::string text = found.result->dump();
        base::clean_untrusted_json(text);
        rt.store().complete_idempotency(principal, call.tool, key, false, text);
        return mcp::ToolResult::structured(std::move(text));
    }
    log::warn("{}: idempotency_key {} of {}: {}; no record of it at the gateway ({})", call.tool,
              key, principal, lost, found.detail);
    mcp::ToolResult unknown = tool_error(
        "outcome_unknown",
        lost + "; the gateway shows no record of it (" + found.detail +
            "), and it was not sent again. Check before running it again: " + found.hint +
            ". To run it anyway, call again with a new idempotency_key.",
        {{"first_called_at", iso_time(first.created_at)}, {"check", found.hint}});
    rt.store().complete_idempotency(principal, call.tool, key, true,
                                    unknown.content[0].value("text", ""));
    return unknown;
}

// The answer to a call whose idempotency_key is already known: the first call's result, or why
// the key cannot be used (other arguments, or the first call still running).
mcp::ToolResult known_key_answer(ActionRuntime& rt, const IdempotencyRecord& existing,
                                 const std::string& digest, const ActionCall& call,
                                 const json& call_args, const std::string& key,
                                 mcp::RequestContext& ctx, WriteTrail& trail) {
    const std::string& tool = call.tool;
    const std::string principal = principal_of(ctx);
    if (existing.args_digest != digest)
        return tool_error("validation", "idempotency_key \"" + key +
                                            "\" was already used with other arguments for " + tool +
                                            "; use a new key for a new request, or repeat "
                                            "the first request's arguments exactly");
    if (past_lease(rt, existing))
        return resolve_lost_call(rt, call, existing, call_args, key, ctx, trail);
    if (existing.pending)
        return tool_error(
            "in_progress",
            "the first call with idempotency_key \"" + key + "\" (at " +
                iso_time(existing.created_at) +
                ") is still running; retry with the same key shortly. If it has not finished "
                "by " +
                iso_time(existing.created_at + rt.settings().stale_claim.count()) +
                ", the next repeat checks the gateway for its record instead.");
    log::info("{}: idempotency_key {} of {} replayed, no gateway request", tool, key, principal);
    trail.replayed = true;
    // Marked, so that nobody takes the first call's answer for a second action.
    json answer = json::parse(existing.result, nullptr, false);
    json* target = existing.is_error && answer.is_object() && answer.contains("error")
                       ? &answer["error"]
                       : &answer;
    if (!target->is_object())
        return existing.is_error ? mcp::ToolResult::text(existing.result, true)
                                 : mcp::ToolResult::structured(existing.result);
    (*target)["replayed"] = true;
    if (existing.created_at > 0) (*target)["first_called_at"] = iso_time(existing.created_at);
    return existing.is_error ? mcp::ToolResult::text(answer.dump(), true)
                             : mcp::ToolResult::structured(answer.dump());
}

// Replay stage: a known idempotency_key is answered before any preview or confirmation; a
// repeat gets the first result (nothing is sent again), a misuse its error, without asking
// anyone.
std::optional<mcp::ToolResult> replay_known_key(ActionRuntime& rt, const ActionCall& call,
                                                const json& call_args, mcp::RequestContext& ctx,
                                                WriteTrail& trail) {
    const std::string key = string_arg(call_args, "idempotency_key");
    if (key.empty()) return std::nullopt;
    auto record = rt.store().find_idempotency(principal_of(ctx), call.tool, key);
    if (!record) return std::nullopt;
    json stripped;
    const json& args = without(call_args, "idempotency_key", stripped);
    return known_key_answer(rt, *record, args_digest(args), call, args, key, ctx, trail);
}

// A claim is never taken over by the store: a lost call is resolved by resolve_lost_call, which
// reads the gateway instead of sending again.
constexpr std::chrono::seconds kNeverTakeOver{std::int64_t{1} << 40};

// The rate_limited answer to a refused credit permit.
mcp::ToolResult credit_refusal(const std::string& tool, const std::string& client_id,
                               const CreditLimiter::Refusal& refusal) {
    log::warn("{}: refused for {}: {}", tool, client_id, refusal.message);
    count_credit_refusal(tool);
    return tool_error("rate_limited", refusal.message, {{"retry_after_s", refusal.retry_after_s}});
}

// Credit stage: a permit for the call's client, or the rate_limited answer.
std::variant<CreditLimiter::Permit, mcp::ToolResult> acquire_credits(ActionRuntime& rt,
                                                                     const std::string& tool,
                                                                     const json& args) {
    const std::string client_id = string_arg(args, "client_id");
    auto got = rt.credits().try_acquire(client_id);
    if (auto* refusal = std::get_if<CreditLimiter::Refusal>(&got))
        return credit_refusal(tool, client_id, *refusal);
    return std::move(std::get<CreditLimiter::Permit>(got));
}

// Budget stage: one unit of the caller's action budget for a generation action (kept once
// the action ran or may have run; given back when it never reached the gateway or the gateway
// refused it), or the `budget` refusal. No unit when no budget applies to the caller.
std::variant<BudgetUnit, mcp::ToolResult> take_budget_unit(ActionRuntime& rt,
                                                           const ActionCall& call,
                                                           const mcp::Principal& caller) {
    const BudgetSettings& settings = rt.settings().budgets;
    const auto limit = budget_limit(settings, caller);
    if (!limit) return BudgetUnit{};
    const WindowSpan window = budget_window_at(settings.window, rt.clock().unix_s());
    const state::BudgetTake take = rt.store().take_budget(caller.name, window.start, *limit);
    if (!take.granted)
        return budget_refusal(
            call.tool,
            BudgetStatus{
                .limit = *limit, .used = take.used, .window = window, .kind = settings.window});
    count_budget_unit("taken");
    return BudgetUnit(&rt.store(), caller.name, window.start);
}

// Idempotency stage: an idempotency_key claimed for one call. The claim stays only once the
// call may have spent credits or sent its POST; otherwise the key is free again.
class KeyClaim {
public:
    KeyClaim(ActionRuntime& rt, const ActionCall& call, std::string principal, std::string key)
        : rt_(rt),
          call_(call),
          principal_(std::move(principal)),
          tool_(call.tool),
          key_(std::move(key)) {}
    KeyClaim(const KeyClaim&) = delete;
    KeyClaim& operator=(const KeyClaim&) = delete;

    // nullopt when claimed (or no key was given), else the known key's answer. The digest is
    // taken only with a key: most calls have none. With `permit` (a call that spends credits),
    // the credit permit is taken in the same store step when the credits count in the store
    // (then a refusal is the answer and the key stays free); else `permit` stays empty.
    std::optional<mcp::ToolResult> claim(const json& call_args, mcp::RequestContext& ctx,
                                         WriteTrail& trail,
                                         std::optional<CreditLimiter::Permit>* permit = nullptr) {
        if (key_.empty()) return std::nullopt;
        const std::string digest = args_digest(call_args);
        std::optional<IdempotencyRecord> existing;
        auto both = permit ? rt_.credits().try_acquire_claiming(
                                 rt_.store(), string_arg(call_args, "client_id"),
                                 {principal_, tool_, key_, digest, kNeverTakeOver})
                           : std::nullopt;
        if (!both) {
            existing =
                rt_.store().claim_idempotency(principal_, tool_, key_, digest, kNeverTakeOver);
        } else if (auto* refusal = std::get_if<CreditLimiter::Refusal>(&*both)) {
            return credit_refusal(tool_, string_arg(call_args, "client_id"), *refusal);
        } else if (auto* record = std::get_if<IdempotencyRecord>(&*both)) {
            existing = std::move(*record);
        } else {
            permit->emplace(std::move(std::get<CreditLimiter::Permit>(*both)));
        }
        if (existing) {
            // The first call with this key is still running (here or on another instance):
            // its result is what this call answers, so wait for it a while.
            if (existing->pending && existing->args_digest == digest && !past_lease(rt_, *existing))
                existing = await_first_call(std::move(*existing), ctx.stop);
            return known_key_answer(rt_, *existing, digest, call_, call_args, key_, ctx, trail);
        }
        held_ = true;
        return std::nullopt;
    }
    void release() {
        if (held_) rt_.store().release_idempotency(principal_, tool_, key_);
        held_ = false;
    }
    // Left to the call's write-log row (trail.settle): the key's result and, when the permit
    // is the store's, its slot; all three are stored in one step after the answer is made.
    void settle(bool is_error, const std::string& text,
                std::optional<CreditLimiter::Permit>& permit, WriteTrail& trail) {
        if (permit) trail.settle.slot_id = permit->hand_over();
        if (held_) {
            trail.settle.principal = principal_;
            trail.settle.tool = tool_;
            trail.settle.key = key_;
            trail.settle.is_error = is_error;
            trail.settle.result = text;
        }
        held_ = false;
    }

private:
    // Polls the record until the first call settles, `stop` fires or the wait's bound passes;
    // returns the record as last seen (still pending: the caller hears in_progress).
    IdempotencyRecord await_first_call(IdempotencyRecord record, std::stop_token stop) {
        std::mutex m;
        std::condition_variable_any cv;
        const auto until = std::chrono::steady_clock::now() + rt_.settings().await_first_call;
        while (record.pending && std::chrono::steady_clock::now() < until) {
            std::unique_lock lock(m);
            if (cv.wait_for(lock, stop, std::chrono::milliseconds(200), [] { return false; }) ||
                stop.stop_requested())
                break;
            auto now = rt_.store().find_idempotency(principal_, tool_, key_);
            if (!now) break;  // released: the first call created nothing; report as pending
            record = std::move(*now);
        }
        return record;
    }

    ActionRuntime& rt_;
    const ActionCall& call_;
    std::string principal_;
    std::string tool_;
    std::string key_;
    bool held_ = false;
};

// Idempotency, credits, execute and shape: the stages after the confirmation.
mcp::ToolResult claim_and_execute(ActionRuntime& rt, const ActionCall& call, const json& args,
                                  const Preview& preview, mcp::RequestContext& ctx,
                                  WriteTrail& trail) {
    json stripped;
    const json& call_args = without(args, "idempotency_key", stripped);
    KeyClaim claim(rt, call, principal_of(ctx), string_arg(args, "idempotency_key"));
    std::optional<CreditLimiter::Permit> permit;  // held until the work is done
    if (auto known = claim.claim(call_args, ctx, trail, call.spends_credits ? &permit : nullptr))
        return std::move(*known);
    // A replay answered above spends nothing; every unit taken below is given back (the
    // BudgetUnit's destructor) unless the action ran or may have run.
    BudgetUnit unit;
    try {
        if (call.spends_credits) {
            auto got = take_budget_unit(rt, call, ctx.principal);
            if (auto* refused = std::get_if<mcp::ToolResult>(&got)) {
                claim.release();
                return std::move(*refused);
            }
            unit = std::move(std::get<BudgetUnit>(got));
        }
        if (call.spends_credits && !permit) {
            auto got = acquire_credits(rt, call.tool, args);
            if (auto* refused = std::get_if<mcp::ToolResult>(&got)) {
                claim.release();
                return std::move(*refused);
            }
            permit.emplace(std::move(std::get<CreditLimiter::Permit>(got)));
        }
        trail.sent = true;
        std::string text = call.execute(call_args, preview, ctx).dump();
        unit.keep();
        // The result echoes the gateway's record: its text is cleaned before anyone reads it
        // (and before a replay of this key would).
        base::clean_untrusted_json(text);
        claim.settle(false, text, permit, trail);
        return mcp::ToolResult::structured(std::move(text));
    } catch (const gateway::Error& e) {
        mcp::ToolResult error = tool_error(e);
        // The action may have run (an ambiguous failure, or a stop that came after a POST
        // left: such an error carries what was sent): a repeat with this key must not send it
        // again, and its budget unit stays spent.
        const bool may_have_run =
            e.reason() == gateway::ErrorReason::outcome_unknown ||
            (e.reason() == gateway::ErrorReason::cancelled && e.data().is_object());
        if (may_have_run && !error.content.empty()) {
            unit.keep();
            claim.settle(true, error.content[0].value("text", ""), permit, trail);
        } else {
            claim.release();
        }
        return error;
    } catch (const Refused& r) {
        claim.release();
        trail.sent = false;  // the action could not run at all: nothing was sent
        return tool_error(r.reason, r.message);
    } catch (...) {
        if (trail.sent) unit.keep();  // it may have run: never one action more than the budget
        claim.release();
        throw;
    }
}

}  // namespace

namespace {

mcp::ToolResult run_stages(ActionRuntime& rt, const ActionCall& call, const json& args,
                           mcp::RequestContext& ctx, WriteTrail& trail) {
    if (call.box)
        if (auto refused = write_scope_refusal(*call.box, call.tool))
            return tool_error(refused->reason, refused->message);
    if (!call.preview) {
        trail.confirmation = "not_needed";
        return claim_and_execute(rt, call, args, Preview{.needed = false}, ctx, trail);
    }

    const std::string confirmation_id = string_arg(args, "confirmation_id");
    trail.confirmation_id = confirmation_id;
    json stripped;
    const json& call_args = without(args, "confirmation_id", stripped);
    if (auto replay = replay_known_key(rt, call, call_args, ctx, trail)) return std::move(*replay);
    // A generation action past the caller's budget is refused before its preview reads
    // anything or a person is asked; the unit itself is taken after the confirmation.
    const auto budget = call.spends_credits ? budget_status(rt.store(), rt.settings().budgets,
                                                            rt.clock(), ctx.principal)
                                            : std::nullopt;
    if (budget && budget->remaining == 0) return budget_refusal(call.tool, *budget);
    std::optional<Preview> preview;
    try {
        preview = call.preview(call_args, ctx);
    } catch (const Refused& r) {
        return tool_error(r.reason, r.message);
    }
    if (budget && preview->needed) {  // what the action costs and what remains
        preview->message += " " + budget_sentence(*budget);
        if (preview->details.is_object()) {
            json cost = budget->to_json();
            cost["cost"] = 1;
            preview->details["budget"] = std::move(cost);
        }
    }
    if (preview->needed) {
        if (auto stop = confirm(rt, call, call_args, confirmation_id, *preview, ctx))
            return std::move(*stop);
        // confirm() lets a call through only on a valid confirmation_id or a person's yes.
        trail.confirmation = view_decision()           ? "view"
                             : confirmation_id.empty() ? "person"
                                                       : "confirmation_id";
    } else {
        trail.confirmation = "not_needed";
    }
    return claim_and_execute(rt, call, call_args, *preview, ctx, trail);
}

}  // namespace

mcp::ToolResult run_action(ActionRuntime& rt, const ActionCall& call, const json& args,
                           mcp::RequestContext& ctx) {
    // Every answer but an error carries the gateway's records (the result's data, a replay of
    // it, a preview's title and excerpt): marked untrusted.
    WriteTrail trail;
    trail.caller_clients = caller_clients_of(ctx.principal);
    mcp::ToolResult result;
    try {
        result = run_stages(rt, call, args, ctx, trail);
    } catch (const mcp::InputRequired&) {
        throw;  // a modern round asking a person: the call comes again with the answer
    } catch (const gateway::Error& e) {
        // A preview's read that failed: the shape stage makes it a tool error; recorded here.
        rt.write_log().append(write_log_entry(call.tool, args, principal_of(ctx), trail,
                                              tool_error(e), call.record_field),
                              trail.settle);
        throw;
    } catch (const state::StoreError& e) {
        rt.write_log().append(
            write_log_entry(call.tool, args, principal_of(ctx), trail,
                            tool_error("state_unavailable", e.what()), call.record_field),
            trail.settle);
        throw;
    }
    rt.write_log().append(
        write_log_entry(call.tool, args, principal_of(ctx), trail, result, call.record_field),
        trail.settle);
    if (!result.is_error) mark_untrusted(result);
    return result;
}

void record_refusal(ActionRuntime& rt, const std::string& tool, const std::string& record_field,
                    const json& args, mcp::RequestContext& ctx, const mcp::ToolResult& refusal) {
    WriteTrail trail;
    trail.caller_clients = caller_clients_of(ctx.principal);
    rt.write_log().append(
        write_log_entry(tool, args, principal_of(ctx), trail, refusal, record_field));
}

mcp::ToolResult state_unavailable(const state::StoreError& e) {
    const bool busy = e.kind() == state::StoreError::Kind::busy;
    constexpr const char* if_action =
        " If this was an action, check with the read tools whether it ran before running it "
        "again.";
    if (e.backend() == state::StoreError::Backend::postgres) {
        log::error("state store (PostgreSQL): {}", e.what());
        return tool_error(
            "state_unavailable",
            std::string("the server could not reach or use its shared state store (PostgreSQL, "
                        "--state-url): ") +
                e.what() +
                ". This call could not be recorded. Try again in a moment; if it persists, "
                "the operator should check that PostgreSQL runs and accepts the server's "
                "connections at --state-url." +
                if_action,
            {{"retryable", busy}});
    }
    log::error("state database: {}", e.what());
    const bool read_only = e.kind() == state::StoreError::Kind::read_only;
    return tool_error(
        "state_unavailable",
        std::string("the server's state database is ") +
            (busy        ? "locked by another process"
             : read_only ? "read-only"
                         : "failing") +
            ", so this call could not be recorded. Try again in a moment; if it persists, the "
            "operator should check the state database (--state-db)." +
            if_action,
        {{"retryable", busy}});
}

Handler checked_handler(std::shared_ptr<const InputValidator> validator, Handler handler,
                        RefusalHook on_refused) {
    return [validator = std::move(validator), handler = std::move(handler),
            on_refused = std::move(on_refused)](const json& args,
                                                mcp::RequestContext& ctx) -> mcp::ToolResult {
        if (std::string problem = validator->validate(args); !problem.empty()) {
            mcp::ToolResult refusal = tool_error("validation", problem);
            if (on_refused) on_refused(args, ctx, refusal);
            return refusal;
        }
        return failures_as_tool_errors([&] { return handler(args, ctx); });
    };
}

namespace {

// How it is known that the gateway key lacks the write scope ("" when it is not known).
std::string write_denial(Toolbox& box) {
    if (box.gateway().write_denied())
        return "the gateway answered a POST with 403, saying the key lacks the write scope";
    try {
        const auto discovery = box.gateway().discovery();
        if (discovery->key_scopes &&
            std::find(discovery->key_scopes->begin(), discovery->key_scopes->end(), "write") ==
                discovery->key_scopes->end())
            return "the gateway's discovery lists the key's scopes without write";
    } catch (const std::exception& e) {
        // Not known then: the call reports the gateway's failure itself.
        log::debug("discovery unavailable while checking the key's scope: {}", e.what());
    }
    return {};
}

}  // namespace

std::optional<Refused> write_scope_refusal(Toolbox& box, const std::string& tool) {
    const std::string how = write_denial(box);
    if (how.empty()) return std::nullopt;
    return Refused{"scope", tool +
                                " cannot run: the gateway API key this server uses lacks the write "
                                "scope (" +
                                how +
                                "). Nothing was sent. An operator must issue a key "
                                "with the write scope in the agency's app settings, set it as "
                                "AGENCY_API_KEY and restart the server; the read tools work "
                                "meanwhile."};
}

Handler with_call_stages(std::shared_ptr<const InputValidator> validator, Handler handler,
                         RefusalHook on_refused) {
    // Outermost first: shape and validate (checked_handler), then the client scope, then the
    // tool (an action's handler runs run_action's stages above).
    return checked_handler(std::move(validator),
                           within_client_scope(std::move(handler), on_refused), on_refused);
}

std::function<mcp::ToolResult(const json& resume, const json& args, mcp::RequestContext&)>
checked_resume(
    std::function<mcp::ToolResult(const json& resume, const json& args, mcp::RequestContext&)>
        resume) {
    return [resume = std::move(resume)](const json& saved, const json& args,
                                        mcp::RequestContext& ctx) -> mcp::ToolResult {
        return failures_as_tool_errors([&] { return resume(saved, args, ctx); });
    };
}

}  // namespace agency::tools
