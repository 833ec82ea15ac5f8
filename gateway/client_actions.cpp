// Action POSTs: never sent again unless the action's ResendRule and what the client can see
// allow it (actions.hpp); the repeats themselves follow the RetrySchedule (retry.hpp).
#include <cctype>

#include "gateway/client_internal.hpp"
#include "gateway/json_parse.hpp"

namespace agency::gateway {

using internal::ActionRun;
using internal::Exchange;

namespace {

// A 403 on a POST is either the key's missing write scope or a client not linked to the agency
// (spec, Errors). Only a text that speaks of scope, write or permission and names no client is
// taken for the scope: in doubt it is the client's access, which says nothing about other
// clients.
bool says_write_scope_missing(const std::string& gateway_text) {
    std::string text = gateway_text.substr(0, 4096);
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto has = [&](std::string_view word) { return text.find(word) != std::string::npos; };
    return (has("scope") || has("write") || has("permission")) && !has("client") &&
           !has("link");
}

}  // namespace

bool Client::write_denied() const { return impl_->write_denied.load(); }

void Client::on_write_denied(std::function<void()> listener) {
    std::lock_guard lock(impl_->write_denied_mu);
    impl_->on_write_denied = std::move(listener);
}

void Client::Impl::learn_write_denied() {
    if (write_denied.exchange(true)) return;
    log_line(log::Level::warn,
             "the gateway key lacks the write scope: action tools are withdrawn until the "
             "server runs with a key that has it");
    std::lock_guard lock(write_denied_mu);
    if (on_write_denied) on_write_denied();
}

internal::ActionRun Client::Impl::plan_action(std::string_view action, std::string_view client_id,
                                              const nlohmann::json& fields,
                                              const std::stop_token& stop) {
    ActionRun run;
    run.action = std::string(action);
    run.client_id = std::string(client_id);
    run.what = "action " + run.action + " for " + run.client_id;
    if (!fields.is_null() && !fields.is_object()) {
        throw error(ErrorReason::validation, "the fields of " + run.what + " must be a JSON object");
    }
    run.body = fields.is_object() ? fields : nlohmann::json::object();
    run.body["action"] = action;
    run.body["client_id"] = client_id;
    run.body_text = run.body.dump();

    run.spec = find_action_spec(action, run.body);
    const ActionSpec* spec = run.spec;
    run.rule = spec != nullptr ? spec->resend : ResendRule::unknown;
    if ((run.rule == ResendRule::verify || run.rule == ResendRule::verify_state ||
         run.rule == ResendRule::confirm_only) &&
        !detail::can_verify(*spec, run.body)) {
        run.rule = ResendRule::unknown;
        run.unverifiable = "the request lacks the fields needed to find its record";
    } else if (spec == nullptr) {
        run.unverifiable = "the client has no way to check this action's effect";
    } else if (run.rule == ResendRule::unknown) {
        run.unverifiable = "the gateway keeps no readable record of it";
    }
    // verify_state: the row as it was before anything is sent, to compare with afterwards.
    if (run.rule == ResendRule::verify_state) {
        try {
            run.before = read_target_row(*spec, run.body, client_id, stop);
            if (run.before.is_null()) {
                run.rule = ResendRule::unknown;
                run.unverifiable = "the " + std::string(spec->resource) +
                                   " row it acts on was not found before sending";
            }
        } catch (const Error& e) {
            if (e.reason() == ErrorReason::cancelled) throw cancelled(run.what);
            run.rule = ResendRule::unknown;
            run.unverifiable = "the " + std::string(spec->resource) +
                               " row it acts on could not be read before sending (" + e.what() +
                               ")";
        }
    }
    run.hint = spec != nullptr && !spec->check_hint.empty() ? std::string(spec->check_hint)
                                                            : std::string("read what it writes");
    return run;
}

ActionResult Client::Impl::act(std::string_view action, std::string_view client_id,
                               const nlohmann::json& fields, const std::stop_token& stop,
                               const std::stop_token& cut_exchange) {
    ActionRun run = plan_action(action, client_id, fields, stop);
    // Nothing has been sent yet: a caller that gave up by now is told so, and nothing goes out.
    if (stop.stop_requested()) throw cancelled(run.what);
    // From here a POST may leave. The caller giving up (a closed connection, a cancellation, a
    // drain past its time) no longer ends the exchange: it runs to its end within the call's
    // budget, so that what the gateway did is known and recorded (the idempotency key's answer,
    // the write log) instead of guessed. An answer nobody reads is still the record of the act.
    // Only `cut_exchange` ends it (Client::act).
    std::optional<ActionResult> result;
    with_retries(config.max_attempts, run.what, cut_exchange, [&](int attempt, bool last) {
        return post_once(run, attempt, last, result, cut_exchange);
    });
    return std::move(*result);
}

std::optional<Retry> Client::Impl::post_once(ActionRun& run, int attempt, bool last,
                                             std::optional<ActionResult>& result,
                                             const std::stop_token& stop) {
    const auto sent_at = clock.wall();
    const auto ex =
        perform("POST", url.path, &run.body_text, run.answer, config.action_timeout, stop);
    const bool arrived = ex.status != 0 || ex.maybe_sent;
    if (arrived) {
        ++run.posts;
        if (!run.first_sent) run.first_sent = sent_at;
    }
    if (!ex.over_limit.empty()) throw too_large_answer(run, ex);
    if (ex.ok()) {
        result = success(run, ex);
        return std::nullopt;
    }
    const internal::ActionFailure failed{ex, failure_text(ex, run.answer, config.action_timeout),
                                         safe(internal::gateway_error_text(run.answer))};
    const auto& failure = failed.failure;
    const auto& what = run.what;

    if (stop.stop_requested() && ex.status == 0) {
        if (!arrived) throw cancelled(what);
        throw error(ErrorReason::cancelled,
                    "the " + what +
                        " was cancelled while the gateway was working on it; it may or may not "
                        "have run",
                    0, {}, std::nullopt, known(run, ex, failure, "not attempted: cancelled"));
    }
    if (ex.status == 429 || !arrived) {
        // The gateway did not do the work: safe to send again.
        if (last) {
            const auto reason =
                ex.status == 429 ? ErrorReason::rate_limited : ErrorReason::unavailable;
            log_line(log::Level::error, "gateway {} failed after {} attempts: {}; it was not run",
                     what, attempt + 1, failure);
            throw error(reason,
                        "the gateway " + what + " failed after " + std::to_string(attempt + 1) +
                            " attempts: " + failure + "; the action was not run" +
                            (ex.status == 0 ? " (gateway at " + url.display + ")" : ""),
                        ex.status, failed.gw_text);
        }
        Retry retry{failure + "; not run, sending again"};
        retry.http_status = ex.status;
        retry.not_run = true;
        if (ex.status == 429) retry.retry_after = ex.retry_after;
        return retry;
    }
    if (ex.status != 0 && ex.status < 500) {
        log_line(log::Level::warn, "gateway {}: {}", what, failure);
        std::string message = "the gateway refused the " + what + ": " + failure;
        if (ex.status == 403 && says_write_scope_missing(failed.gw_text)) {
            learn_write_denied();
            message += ". The gateway API key lacks the write scope: issue a key with the "
                       "write scope in the agency's app settings and give it to this server "
                       "(AGENCY_API_KEY)";
        }
        throw error(internal::reason_for_status(ex.status), std::move(message), ex.status,
                    failed.gw_text);
    }

    // Ambiguous: a 5xx, a timeout or a dropped connection after the request went out.
    if (run.rule == ResendRule::retry_safe) {
        if (last) {
            log_line(log::Level::error, "gateway {} failed after {} attempts: {}", what,
                     attempt + 1, failure);
            throw error(ex.status != 0 ? ErrorReason::upstream : ErrorReason::unavailable,
                        "the gateway " + what + " failed after " + std::to_string(attempt + 1) +
                            " attempts: " + failure,
                        ex.status, failed.gw_text);
        }
        return Retry{failure + "; repeating it is harmless, retrying", std::nullopt, ex.status};
    }
    if (run.rule == ResendRule::unknown) {
        throw outcome_unknown(what, failure, ex.status, failed.gw_text,
                              known(run, ex, failure, "not possible: " + run.unverifiable),
                              run.unverifiable, run.hint);
    }
    return check_after_failure(run, failed, attempt, last, result, stop);
}

// An answer over a limit on its size: the POST reached the gateway, which answered, but
// what it said is not read, so whether the action ran is not known (a 4xx: it did not).
Error Client::Impl::too_large_answer(const ActionRun& run, const Exchange& ex) const {
    const std::string failure =
        (ex.status != 0 ? "HTTP " + std::to_string(ex.status) + ", but " : std::string()) +
        ex.over_limit;
    if (ex.status >= 400 && ex.status < 500) {
        log_line(log::Level::warn, "gateway {}: {}", run.what, failure);
        return error(internal::reason_for_status(ex.status),
                     "the gateway refused the " + run.what + ": " + failure, ex.status);
    }
    return outcome_unknown(run.what, failure, ex.status, {},
                           known(run, ex, failure, "not attempted: the gateway answered"),
                           "its answer was too large to read", run.hint);
}

nlohmann::json Client::Impl::known(const ActionRun& run, const Exchange& ex,
                                   const std::string& failure, std::string verification) const {
    nlohmann::json data = {{"action", run.action},
                           {"client_id", run.client_id},
                           {"attempts", run.posts},
                           {"failure", failure},
                           {"verification", std::move(verification)}};
    if (run.first_sent) data["sent_at"] = base::format_utc_time(*run.first_sent);
    if (ex.status != 0) data["http_status"] = ex.status;
    return data;
}

Error Client::Impl::outcome_unknown(const std::string& what, const std::string& failure,
                                    int http_status, const std::string& gw_text,
                                    nlohmann::json data, const std::string& why,
                                    const std::string& hint) const {
    log_line(log::Level::error,
             "gateway {}: {}; it may or may not have run and was not re-sent: {}", what, failure,
             why);
    if (!hint.empty() && data.is_object()) data["check"] = hint;
    return error(ErrorReason::outcome_unknown,
                 "the " + what + " may or may not have run (" + failure +
                     "); it was not re-sent because " + why + ". Check before running it " +
                     (hint.empty() ? std::string("again.") : "again: " + hint + "."),
                 http_status, gw_text, std::nullopt, std::move(data));
}

ActionResult Client::Impl::success(const ActionRun& run, const Exchange& ex) {
    const auto& answer = run.answer;
    const auto& what = run.what;
    auto response = parse_json(answer);
    if (!response.is_object()) {
        // The gateway says it finished, but its answer cannot be read.
        throw outcome_unknown(
            what,
            "HTTP " + std::to_string(ex.status) +
                " with a body that is not a JSON object: " + internal::body_excerpt(answer),
            ex.status, {},
            known(run, ex, failure_text(ex, answer, config.action_timeout),
                  "not attempted: the gateway answered"),
            "the answer could not be read");
    }
    const auto status = response.value("status", std::string{});
    std::optional<int> status_code;
    if (const auto it = response.find("status_code");
        it != response.end() && it->is_number_integer()) {
        status_code = it->get<int>();
    }
    // Moved out, not copied: the rest of the answer is not kept.
    nlohmann::json data = nullptr;
    if (const auto it = response.find("data"); it != response.end()) data = std::move(*it);
    if (status == "error" || (status != "success" && status_code && *status_code >= 400)) {
        // gateway_error_text without parsing the answer again.
        std::string gw_text;
        if (const auto it = response.find("error"); it != response.end() && it->is_string()) {
            gw_text = it->get<std::string>();
        }
        std::string message =
            "the " + what + " did not complete: the gateway reported status \"" + status + "\"";
        if (status_code) message += " with status_code " + std::to_string(*status_code);
        if (!gw_text.empty()) message += ": " + gw_text;
        // Only status "error" is promised not to be billed (spec, Errors rule 4).
        message += status == "error"
                       ? "; the gateway does not bill work that did not complete, and it was "
                         "not re-sent"
                       : "; whether it was billed is not known, and it was not re-sent";
        log_line(log::Level::warn, "gateway: {}", message);
        throw error(ErrorReason::upstream, std::move(message), ex.status, std::move(gw_text),
                    status_code, std::move(data));
    }
    claim(run.spec, data);
    ActionResult result;
    result.status_code = status_code.value_or(200);
    result.data = std::move(data);
    result.attempts = run.posts;
    return result;
}

}  // namespace agency::gateway
