// The check after an ambiguous failure of an action that is not retry-safe: read what the
// action writes and conclude ran / did not run / cannot tell (actions.hpp). Only a conclusive
// "did not run" from an attempt the gateway answered lets the action be sent again.
#include "gateway/client_internal.hpp"
#include "gateway/json_parse.hpp"

namespace agency::gateway {

using internal::ActionRun;

namespace {

// Records the client itself created or recovered are never matched again, so two identical
// actions in quick succession cannot both claim the first one's record.
bool claims_records(const ActionSpec& spec) {
    return spec.resend != ResendRule::unknown && !spec.resource.empty() &&
           spec.filter_body_field.empty() && !spec.time_field.empty() &&
           spec.time_field == spec.order;
}

std::string claim_key(std::string_view resource, const nlohmann::json& row) {
    const auto it = row.is_object() ? row.find("id") : row.end();
    if (!row.is_object() || it == row.end()) return {};
    const auto id = detail::scalar_text(*it);
    return id ? std::string(resource) + '\n' + *id : std::string{};
}

}  // namespace

void Client::Impl::claim(const ActionSpec* spec, const nlohmann::json& row) {
    if (spec == nullptr || !claims_records(*spec)) return;
    auto key = claim_key(spec->resource, row);
    if (key.empty()) return;
    std::lock_guard lock(claimed_mu);
    if (!claimed.insert(key).second) return;
    claimed_order.push_back(std::move(key));
    if (claimed_order.size() > internal::kMaxClaimed) {
        claimed.erase(claimed_order.front());
        claimed_order.pop_front();
    }
}

bool Client::Impl::is_claimed(const ActionSpec& spec, const nlohmann::json& row) {
    if (!claims_records(spec)) return false;
    const auto key = claim_key(spec.resource, row);
    std::lock_guard lock(claimed_mu);
    return !key.empty() && claimed.count(key) != 0;
}

nlohmann::json Client::Impl::read_checked_page(const ReadQuery& q, const std::string& what,
                                               const std::stop_token& stop) {
    std::string page;
    get(read_target(q), what, page, stop, config.max_attempts);
    auto json = parse_json(page);
    if (!json.is_object() || !json.contains("data") || !json["data"].is_array()) {
        throw error(ErrorReason::upstream,
                    "the gateway answered the " + what + " without a `data` array");
    }
    return json;
}

// Reads the newest rows of the written resource and judges whether an attempt sent at or after
// `first_sent` created its record (verify, confirm_only). Throws Error when the read fails.
detail::Verdict Client::Impl::verify(const ActionSpec& spec, const nlohmann::json& body,
                                     std::string_view client_id,
                                     std::chrono::system_clock::time_point first_sent,
                                     const std::stop_token& stop) {
    ReadQuery q;
    q.resource = std::string(spec.resource);
    q.client_id = std::string(client_id);
    q.limit = internal::kVerifyLimit;
    q.order = std::string(spec.order);
    q.direction = "desc";
    if (!spec.filter_body_field.empty()) {
        q.filter_field = "id";
        q.filter_value = *detail::scalar_text(body[std::string(spec.filter_body_field)]);
    }
    const auto json = read_checked_page(q, "verification " + describe_read(q), stop);
    bool has_more = true;  // unknown: assume more rows exist
    if (const auto p = json.find("pagination"); p != json.end() && p->is_object()) {
        if (const auto h = p->find("has_more"); h != p->end() && h->is_boolean()) {
            has_more = h->get<bool>();
        }
    }
    const auto not_before = std::chrono::floor<std::chrono::seconds>(first_sent) -
                            std::chrono::duration_cast<std::chrono::seconds>(config.clock_skew);
    return detail::judge_rows(spec, body, json["data"], has_more, internal::kVerifyLimit,
                              not_before,
                              [&](const nlohmann::json& row) { return is_claimed(spec, row); });
}

// The one row a verify_state action acts on (filter_field=id), or null when the gateway has
// none. Throws Error when the read fails.
nlohmann::json Client::Impl::read_target_row(const ActionSpec& spec, const nlohmann::json& body,
                                             std::string_view client_id,
                                             const std::stop_token& stop) {
    ReadQuery q;
    q.resource = std::string(spec.resource);
    q.client_id = std::string(client_id);
    q.limit = internal::kVerifyLimit;
    q.filter_field = "id";
    q.filter_value = *detail::scalar_text(body[std::string(spec.filter_body_field)]);
    auto json = read_checked_page(q, "state " + describe_read(q), stop);
    for (auto& row : json["data"]) {
        // The read filters by id already; checked again so a gateway that ignored the filter
        // cannot make another record look like this one.
        if (row.is_object() && row.contains("id") &&
            detail::scalar_text(row["id"]) == q.filter_value) {
            return std::move(row);
        }
    }
    return nullptr;
}

LostAction Client::Impl::find_lost_action(std::string_view action, std::string_view client_id,
                                          const nlohmann::json& fields,
                                          std::chrono::system_clock::time_point since,
                                          const std::stop_token& stop) {
    nlohmann::json body = fields.is_object() ? fields : nlohmann::json::object();
    body["action"] = action;
    body["client_id"] = client_id;
    const ActionSpec* spec = find_action_spec(action, body);
    LostAction out;
    out.hint = spec != nullptr && !spec->check_hint.empty() ? std::string(spec->check_hint)
                                                            : std::string("read what it writes");
    if (spec == nullptr || !detail::can_verify(*spec, body)) {
        out.detail = spec == nullptr || spec->resend == ResendRule::unknown
                         ? "the gateway keeps no readable record of it"
                         : "the request lacks the fields needed to find its record";
        return out;
    }
    detail::Verdict found;
    if (spec->resend == ResendRule::verify_state) {
        // What the row was before is not known any more: its showing the effect is the proof
        // (the action's effect is there, whoever caused it).
        found = detail::compare_state(*spec, nullptr,
                                      read_target_row(*spec, body, client_id, stop));
    } else {
        found = verify(*spec, body, client_id, since, stop);
    }
    out.ran = found.evidence == detail::Evidence::ran;
    out.row = std::move(found.row);
    if (out.ran && out.row.is_null()) out.row = nlohmann::json::object();
    out.detail = std::move(found.detail);
    if (out.ran && spec->resend == ResendRule::verify_state)
        out.detail = "found the " + std::string(spec->resource) + " row it acts on showing its effect";
    if (out.ran) claim(spec, out.row);
    return out;
}

std::optional<Retry> Client::Impl::check_after_failure(ActionRun& run,
                                                       const internal::ActionFailure& failed,
                                                       int attempt, bool last,
                                                       std::optional<ActionResult>& result,
                                                       const std::stop_token& stop) {
    const auto& ex = failed.ex;
    const auto& failure = failed.failure;
    const auto& what = run.what;
    detail::Verdict found;
    try {
        if (run.rule == ResendRule::verify_state) {
            found = detail::compare_state(*run.spec, run.before,
                                          read_target_row(*run.spec, run.body, run.client_id, stop));
        } else {
            found = verify(*run.spec, run.body, run.client_id, *run.first_sent, stop);
        }
    } catch (const Error& e) {
        if (e.reason() == ErrorReason::cancelled) {
            throw error(ErrorReason::cancelled,
                        "the " + what + " was cancelled while checking whether it ran (" +
                            failure + "); it may or may not have run",
                        ex.status, failed.gw_text, std::nullopt,
                        known(run, ex, failure, "cancelled"));
        }
        throw outcome_unknown(what, failure, ex.status, failed.gw_text,
                              known(run, ex, failure, std::string("failed: ") + e.what()),
                              "checking whether it ran failed: " + std::string(e.what()),
                              run.hint);
    }
    if (found.evidence == detail::Evidence::ran) {
        claim(run.spec, found.row);
        log_line(log::Level::warn, "gateway {}: {}; {}, so it ran and is not sent again", what,
                 failure, found.detail);
        ActionResult& recovered = result.emplace();
        recovered.data = std::move(found.row);
        recovered.status_code = 200;
        recovered.attempts = run.posts;
        recovered.recovered = true;
        recovered.note = "the gateway answered " + failure + ", but " + found.detail +
                         ": it ran once and was not sent again";
        return std::nullopt;
    }
    if (found.evidence == detail::Evidence::unclear) {
        throw outcome_unknown(what, failure, ex.status, failed.gw_text,
                              known(run, ex, failure, found.detail), found.detail, run.hint);
    }
    if (ex.status == 0) {  // the gateway did not finish with this attempt: it may still run
        throw outcome_unknown(what, failure, 0, failed.gw_text,
                              known(run, ex, failure, found.detail),
                              "the gateway may still be working on it (" + found.detail + " yet)",
                              run.hint);
    }
    if (last) {
        log_line(log::Level::error, "gateway {} failed after {} attempts: {}; {}", what,
                 attempt + 1, failure, found.detail);
        throw error(ErrorReason::upstream,
                    "the gateway " + what + " failed after " + std::to_string(attempt + 1) +
                        " attempts: " + failure + "; " + found.detail + ", so it did not run",
                    ex.status, failed.gw_text);
    }
    return Retry{failure + "; " + found.detail + ", so it did not run: sending again", std::nullopt,
                 ex.status, true};
}

}  // namespace agency::gateway
