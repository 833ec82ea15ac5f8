// Asking the client mid-request: legacy server-to-client requests, and the modern rounds of
// input_required results whose sealed requestState carries the answers gathered so far.
#include <algorithm>
#include <future>

#include "base/log.hpp"
#include "base/sealed_token.hpp"
#include "base/work_queue.hpp"
#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

// Whether `answer` has the shape of a result of `method`; malformed answers count as missing.
bool answer_fits(const std::string& method, const json& answer) {
    if (!answer.is_object()) return false;
    if (method == "elicitation/create")
        return answer.contains("action") && answer["action"].is_string();
    if (method == "sampling/createMessage") return answer.contains("content");
    if (method == "roots/list") return answer.contains("roots") && answer["roots"].is_array();
    return true;
}

}  // namespace

// Declared by the client, and not found missing in this session (send_request_and_wait).
bool RequestContext::client_supports(std::string_view capability) const {
    if (!client_capabilities.is_object() || !client_capabilities.contains(std::string(capability)))
        return false;
    if (!session) return true;
    std::lock_guard lock(session->mutex);
    return std::find(session->unanswered.begin(), session->unanswered.end(), capability) ==
           session->unanswered.end();
}

bool RequestContext::renders_views() const {
    if (server_ && !server_->options().views) return false;
    const auto extensions = client_capabilities.find("extensions");
    if (extensions == client_capabilities.end() || !extensions->is_object()) return false;
    const auto ui = extensions->find(std::string(kUiExtension));
    if (ui == extensions->end() || !ui->is_object()) return false;
    const auto types = ui->find("mimeTypes");
    if (types == ui->end() || !types->is_array()) return false;
    return std::any_of(types->begin(), types->end(),
                       [](const json& t) { return t.is_string() && t == kViewMimeType; });
}

bool RequestContext::tool_selected(std::string_view name) const {
    if (!server_) return true;
    return server_->offers_tool(name, principal);
}

json RequestContext::ask(const std::string& key, const std::string& method, const json& params,
                         bool sealed_only) const {
    json questions = json::object();
    questions[key] = {{"method", method}, {"params", params}};
    return ask_all(questions, sealed_only)[key];
}

json RequestContext::ask_all(const json& questions, bool sealed_only) const {
    json answers = json::object();
    if (task_) {
        // A task asks while it runs. Answers gathered before the task was created (modern
        // rounds of before_task) still count.
        json missing = json::object();
        for (const auto& [key, q] : questions.items()) {
            auto it = input_responses_.find(key);
            if (it != input_responses_.end() && answer_fits(q.value("method", ""), *it))
                answers[key] = *it;
            else
                missing[key] = q;
        }
        if (missing.empty()) return answers;
        if (era == Era::modern) {
            json got = task_wait_for_answers(*task_, missing, server_->options().ask_timeout,
                                             answer_fits);
            for (const auto& [key, a] : got.items()) answers[key] = a;
            return answers;
        }
        task_set_status(*task_, TaskStatus::input_required, "waiting for the client's answer",
                        nullptr);
        for (const auto& [key, q] : missing.items()) {
            json params = q.value("params", json::object());
            params["_meta"][std::string(kRelatedTaskMeta)] = {{"taskId", task_id()}};
            answers[key] = server_->send_request_and_wait(*this, q.value("method", ""), params);
        }
        task_set_status(*task_, TaskStatus::working, "", nullptr);
        return answers;
    }
    if (era == Era::modern) {
        json missing = json::object();
        for (const auto& [key, q] : questions.items()) {
            auto it = input_responses_.find(key);
            bool asked = std::find(asked_.begin(), asked_.end(), key) != asked_.end();
            if (it != input_responses_.end() && (asked || !sealed_only) &&
                answer_fits(q.value("method", ""), *it))
                answers[key] = *it;
            else
                missing[key] = q;
        }
        if (!missing.empty()) throw InputRequired{std::move(missing)};
        return answers;
    }
    if (!server_) throw std::runtime_error("no server for this request");
    for (const auto& [key, q] : questions.items()) {
        const std::string method = q.value("method", "");
        json answer = server_->send_request_and_wait(*this, method, q.value("params", json::object()));
        // Checked as a modern inputResponses entry is: the tool reads only well-formed answers.
        if (!answer_fits(method, answer))
            throw RpcError(error_code::invalid_params,
                           "the client's answer to " + method + " is malformed (" +
                               (method == "elicitation/create"
                                    ? std::string("expected an object with a string \"action\"")
                                    : std::string("not the result this method returns")) +
                               "); nothing was done");
        answers[key] = std::move(answer);
    }
    return answers;
}

bool Server::Impl::give_way_for(const std::string& newcomer) {
    Impl& impl = *this;
    std::shared_ptr<PendingRequest> oldest;
    std::size_t held = 0;
    {
        std::lock_guard lock(impl.requests.mutex);
        std::string top;
        std::size_t most = 0;
        for (const auto& [caller, n] : impl.requests.waiting_per_caller)
            if (n > most) {
                most = n;
                top = caller;
            }
        const auto mine = impl.requests.waiting_per_caller.find(newcomer);
        // (this call is counted already: as many as the top means more than the top had)
        if (top.empty() || top == newcomer ||
            (mine != impl.requests.waiting_per_caller.end() && mine->second > most - 1))
            return false;
        auto victim = impl.requests.pending.end();
        for (auto it = impl.requests.pending.begin(); it != impl.requests.pending.end(); ++it)
            if (it->second->caller == top && (victim == impl.requests.pending.end() ||
                                              it->second->order < victim->second->order))
                victim = it;
        if (victim == impl.requests.pending.end()) return false;
        oldest = victim->second;
        impl.requests.pending.erase(victim);
        held = most;
    }
    log::warn("calls waiting on clients: at the bound; {}'s oldest waiting call gave way ({} "
              "waiting)", oldest->caller, held);
    oldest->promise.set_value(
        {.result = nullptr,
         .error = json{{"code", error_code::internal_error},
                       {"message", "this call gave way: every place for calls waiting on a "
                                   "client's answer was taken, and this caller held the most (" +
                                       std::to_string(held) +
                                       "); nothing was done: ask again when fewer wait"}}});
    return true;
}

json Server::send_request_and_wait(const RequestContext& ctx, const std::string& method,
                                   const json& params) {
    if (!ctx.channel_ || !ctx.channel_->can_send_requests())
        throw RpcError(error_code::internal_error,
                       "this transport cannot carry a request to the client");
    // Bounded in all and per caller: one caller's waiting calls leave room for the others'.
    struct Waiting {
        Impl& impl;
        const std::string& caller;
        std::size_t mine = 0;
        ~Waiting() {
            --impl.requests.waiting;
            std::lock_guard lock(impl.requests.mutex);
            if (auto it = impl.requests.waiting_per_caller.find(caller);
                it != impl.requests.waiting_per_caller.end() && --it->second == 0)
                impl.requests.waiting_per_caller.erase(it);
        }
    } waiting{*impl_, ctx.principal.name};
    {
        std::lock_guard lock(impl_->requests.mutex);
        waiting.mine = ++impl_->requests.waiting_per_caller[ctx.principal.name];
    }
    // Every place taken: the caller holding the most (more than this one) gives its oldest
    // up, as sessions and tasks do (issue 45, finding 5); only when this caller holds the most
    // itself is its new call the one refused.
    if (++impl_->requests.waiting > impl_->options.max_waiting_on_clients &&
        !impl_->give_way_for(ctx.principal.name))
        throw RpcError(error_code::internal_error,
                       "too many calls are waiting for clients' answers (at most " +
                           std::to_string(impl_->options.max_waiting_on_clients) +
                           ", and this caller holds the most of them); answer one, or try "
                           "again later");
    if (waiting.mine > impl_->options.max_waiting_per_caller)
        throw RpcError(error_code::internal_error,
                       "too many of this caller's calls are waiting for its answers (at most " +
                           std::to_string(impl_->options.max_waiting_per_caller) +
                           " per caller); answer those first, or try again later");
    auto pending = std::make_shared<PendingRequest>();
    pending->session_id = ctx.session ? ctx.session->id : std::string();
    pending->caller = ctx.principal.name;
    pending->order = impl_->requests.next_id++;
    std::string id = "agency-" + std::to_string(pending->order);
    auto future = pending->promise.get_future();
    {
        std::lock_guard lock(impl_->requests.mutex);
        impl_->requests.pending[id] = pending;
    }
    struct Cleanup {
        Impl* impl;
        std::string id;
        ~Cleanup() {
            std::lock_guard lock(impl->requests.mutex);
            impl->requests.pending.erase(id);
        }
    } cleanup{impl_.get(), id};
    ctx.channel_->send(
        dump({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}));
    auto deadline = std::chrono::steady_clock::now() + impl_->options.ask_timeout;
    // The wait may be long: meanwhile the worker's queue runs another call in its place.
    base::WorkQueue::Waiting outside;
    while (future.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (ctx.stop.stop_requested()) throw RpcError(error_code::internal_error, "cancelled");
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the client did not answer " + method + " in time");
    }
    ClientAnswer answer = future.get();
    if (answer.error) {
        RpcError failed = client_error(*answer.error);
        // Declared, yet not there: the session stops counting on it (client_supports).
        if (failed.code() == error_code::method_not_found && ctx.session) {
            const std::string capability = method.substr(0, method.find('/'));
            std::lock_guard lock(ctx.session->mutex);
            auto& unanswered = ctx.session->unanswered;
            if (std::find(unanswered.begin(), unanswered.end(), capability) == unanswered.end())
                unanswered.push_back(capability);
        }
        throw failed;
    }
    return std::move(answer.result);
}

namespace {

// What a requestState is bound to: the call it continues, its caller and its arguments.
struct StateBinding {
    std::string arguments;
    base::TokenBinding binding;
    StateBinding(const std::string& target, const json& args, const RequestContext& ctx)
        : arguments(args.dump()),
          binding{.subject = target, .principal = ctx.principal.name, .arguments = arguments} {}
};

std::string_view state_refusal(base::TokenRefusal refusal) {
    switch (refusal) {
        case base::TokenRefusal::other_subject: return "it was issued for another call";
        case base::TokenRefusal::other_arguments:
            return "the arguments differ from the ones it was issued for";
        case base::TokenRefusal::spent:
            return "it was already used, and the answers it carried acted once then (on this or "
                   "another instance); nothing was done now. Call the tool again without "
                   "requestState for a new question, or with the same idempotency_key to read "
                   "what the first round did";
        default: return base::describe(refusal);
    }
}

}  // namespace

void Server::restore_round(const std::string& target, const json& arguments, const json& params,
                           RequestContext& ctx) {
    auto state = params.find("requestState");
    if (state != params.end() && !state->is_null()) {
        auto invalid = [](std::string_view why) {
            return RpcError(error_code::invalid_params,
                            "requestState integrity check failed: " + std::string(why));
        };
        if (!state->is_string()) throw invalid(base::describe(base::TokenRefusal::altered));
        const StateBinding bound(target, arguments, ctx);
        auto opened = impl_->state_sealer->open(state->get_ref<const std::string&>(), bound.binding);
        if (auto* refusal = std::get_if<base::TokenRefusal>(&opened))
            throw invalid(state_refusal(*refusal));
        const auto& token = std::get<base::OpenedToken>(opened);
        // Single use, in the store every instance shares: a replayed round (to this instance,
        // another one, or after a restart) would run the tool's confirmed step twice.
        if (!impl_->tasks.store->spend_once("request-state", token.nonce, token.expires_ms))
            throw invalid(state_refusal(base::TokenRefusal::spent));
        ctx.input_responses_ = token.body.value("r", json::object());
        ctx.asked_ = token.body.value("q", json::array());
    }
    // Answers to this round's questions; anything not asked is ignored by ask().
    if (auto responses = params.find("inputResponses");
        responses != params.end() && responses->is_object())
        for (const auto& [k, v] : responses->items()) ctx.input_responses_[k] = v;
}

std::string Server::input_required_text(const json& id, const std::string& target,
                                        const json& arguments, const RequestContext& ctx,
                                        const InputRequired& question) {
    json asked = ctx.asked_;
    for (const auto& [key, q] : question.requests.items())
        if (std::find(asked.begin(), asked.end(), key) == asked.end()) asked.push_back(key);
    // Only answers to questions actually asked travel on; the rest are dropped.
    json kept = json::object();
    for (const auto& [k, v] : ctx.input_responses_.items())
        if (std::find(asked.begin(), asked.end(), k) != asked.end()) kept[k] = v;
    const StateBinding bound(target, arguments, ctx);
    std::string state = impl_->state_sealer->seal(
        bound.binding, impl_->options.state_ttl, {{"q", std::move(asked)}, {"r", std::move(kept)}});
    json out = {{"resultType", "input_required"},
                {"inputRequests", question.requests},
                {"requestState", std::move(state)}};
    impl_->add_server_info(out["_meta"]);
    return dump({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(out)}});
}


}  // namespace agency::mcp
