// The client's construction, discovery (cached, refreshed, checked at start, provisional while
// the gateway is away) and the public calls handed to their parts: client_transport.cpp,
// client_reads.cpp, client_actions.cpp and client_checks.cpp (see client_internal.hpp).
#include "gateway/client.hpp"

#include <algorithm>

#include "gateway/client_internal.hpp"

namespace agency::gateway {

std::string_view to_string(ErrorReason reason) {
    switch (reason) {
        case ErrorReason::validation: return "validation";
        case ErrorReason::auth: return "auth";
        case ErrorReason::scope: return "scope";
        case ErrorReason::not_found: return "not_found";
        case ErrorReason::method: return "method";
        case ErrorReason::rate_limited: return "rate_limited";
        case ErrorReason::upstream: return "upstream";
        case ErrorReason::unavailable: return "unavailable";
        case ErrorReason::outcome_unknown: return "outcome_unknown";
        case ErrorReason::cancelled: return "cancelled";
        case ErrorReason::config: return "config";
    }
    return "unknown";
}

bool Discovery::has_resource(std::string_view name) const {
    return std::find(resources.begin(), resources.end(), name) != resources.end();
}

const DiscoveredAction* Discovery::find_action(std::string_view name) const {
    for (const auto& action : actions) {
        if (action.action == name) return &action;
    }
    return nullptr;
}

namespace {

detail::BaseUrl validate(const Config& config) {
    auto url = detail::parse_base_url(config.base_url);
    const auto bad = [](const std::string& message) { return Error(ErrorReason::config, message); };
    if (config.max_attempts < 1) throw bad("max_attempts must be at least 1");
    if (config.read_timeout.count() <= 0 || config.action_timeout.count() <= 0 ||
        config.connect_timeout.count() <= 0 || config.call_timeout.count() <= 0) {
        throw bad("the gateway timeouts must be positive");
    }
    if (config.backoff_base.count() < 0 || config.max_retry_after.count() < 0 ||
        config.clock_skew.count() < 0) {
        throw bad("backoff_base, max_retry_after and clock_skew must not be negative");
    }
    if (config.api_key.find_first_of("\r\n") != std::string::npos) {
        throw bad("the API key contains a line break");
    }
    return url;
}

}  // namespace

Client::Client(Config config, const base::Clock* clock_or_none) {
    const base::Clock& clock = base::Clock::or_system(clock_or_none);
    auto url = validate(config);
    impl_ = std::make_unique<Impl>(std::move(config), std::move(url), clock);
}

// The background threads first: they use the rest.
Client::~Client() { stop_discovery_refresh(); }

const Config& Client::config() const { return impl_->config; }

const base::Clock& Client::clock() const { return impl_->clock; }

// Each public call is one operation with one deadline (Config::call_timeout): its attempts,
// waits and (for an action) the reads before and after the POST all stay inside it.
Page Client::read(const ReadQuery& query, std::stop_token stop) {
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);
    return impl_->read(query, stop);
}

Page Client::read_body(const ReadQuery& query, std::stop_token stop) {
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);
    return impl_->read(query, stop, false);
}

WalkResult Client::walk(Page& page, const WalkOptions& options, const RowVisitor& on_row) const {
    return impl_->walk(page, options, on_row);
}

Pagination Client::for_each_row(ReadQuery query,
                                const std::function<bool(std::string_view)>& on_row,
                                std::stop_token stop) {
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);  // every page
    return impl_->for_each_row(std::move(query), on_row, stop);
}

ActionResult Client::act(std::string_view action, std::string_view client_id,
                         const nlohmann::json& fields, std::stop_token stop,
                         std::optional<std::stop_token> cut_exchange) {
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);
    return impl_->act(action, client_id, fields, stop, cut_exchange.value_or(std::stop_token{}));
}

LostAction Client::find_lost_action(std::string_view action, std::string_view client_id,
                                    const nlohmann::json& fields,
                                    std::chrono::system_clock::time_point since,
                                    std::stop_token stop) {
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);
    return impl_->find_lost_action(action, client_id, fields, since, stop);
}

std::shared_ptr<const Discovery> Client::discovery(std::stop_token stop) {
    impl_->tell_discovery_left_out();  // a warning start-up's silenced check could not give
    if (auto cached = impl_->cached_discovery()) return cached;
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);
    auto fresh = impl_->fetch_discovery(stop, impl_->config.max_attempts);
    impl_->store_discovery(fresh);
    return fresh;
}

bool Client::refresh_discovery(std::stop_token stop) {
    const DeadlineScope deadline(impl_->clock, impl_->config.call_timeout);
    return impl_->store_discovery(impl_->fetch_discovery(stop, impl_->config.max_attempts));
}

void Client::start_discovery_refresh(std::chrono::milliseconds period,
                                     std::function<void()> on_change) {
    std::lock_guard lock(impl_->refresher_mu);
    impl_->refresher = base::Periodic();  // stops and joins a previous refresher
    Impl* impl = impl_.get();
    impl->refresher = base::Periodic(
        {.period = period,
         .at_once = false,
         .what = "gateway discovery refresh failed",
         .clock = &impl->clock},
        [impl, on_change = std::move(on_change)](std::stop_token stop) {
            if (impl->away.load()) return;  // the reconnecter is at it
            try {
                const bool changed =
                    impl->store_discovery(impl->fetch_discovery(stop, impl->config.max_attempts));
                if (changed && on_change) on_change();
            } catch (const Error& e) {
                if (e.reason() != ErrorReason::cancelled) throw;  // the loop logs it
            }
        });
}

Client::DiscoveryHealth Client::discovery_health() const {
    std::lock_guard lock(impl_->discovery_mu);
    DiscoveryHealth health;
    // While away, the discovery held is the provisional one: the gateway has not answered.
    if (impl_->discovery && !impl_->away.load(std::memory_order_acquire))
        health.since_answer = std::chrono::duration_cast<std::chrono::milliseconds>(
            impl_->clock.steady() - impl_->discovery_at);
    health.failure = impl_->discovery_failure;
    return health;
}

void Client::stop_discovery_refresh() {
    std::lock_guard lock(impl_->refresher_mu);
    impl_->refresher = base::Periodic();
    impl_->reconnecter = std::jthread();
}

void Client::check(std::stop_token stop) {
    auto& impl = *impl_;
    const auto& at = impl.url.display;
    const int attempts = std::min(impl.config.max_attempts, 2);  // fail fast at start-up
    const auto started = impl.clock.steady();
    try {
        const DeadlineScope deadline(impl.clock, impl.config.call_timeout);
        impl.store_discovery(impl.fetch_discovery(stop, attempts));
    } catch (const Error& e) {
        const auto text = e.gateway_error().empty() ? std::string{} : ": " + e.gateway_error();
        const auto http = " (HTTP " + std::to_string(e.http_status()) + text + ")";
        // An error about what the gateway answered: its status and error code carried along.
        const auto answered = [&](ErrorReason reason, const std::string& message) {
            return impl.error(reason, message, e.http_status(), e.gateway_error());
        };
        switch (e.reason()) {
            case ErrorReason::unavailable: {
                const auto& data = e.data();
                std::string why =
                    data.is_object() ? data.value("failure", std::string{}) : std::string{};
                if (why.empty()) why = "no answer";
                if (data.is_object() && data.value("connect_failed", false)) {
                    why = internal::diagnose_connect(impl.url.host, impl.url.port,
                                                     impl.config.connect_timeout);
                }
                // What start-up really waited, measured, not the timeout of one attempt.
                const int made = data.is_object() ? data.value("attempts", attempts) : attempts;
                const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                    impl.clock.steady() - started);
                throw impl.error(ErrorReason::unavailable,
                                 "cannot reach the gateway at " + at + ": " + why + " (" +
                                     std::to_string(made) + (made == 1 ? " attempt" : " attempts") +
                                     ", " + ms_text(waited) + " in all)",
                                 0, {}, std::nullopt, data);
            }
            case ErrorReason::auth:
                throw answered(
                    ErrorReason::auth,
                    impl.config.api_key.empty()
                        ? "the gateway at " + at + " requires an API key" + http +
                              "; set AGENCY_API_KEY"
                        : "the gateway at " + at + " rejected the API key" + http +
                              "; check that it is valid and not expired, or set AGENCY_API_KEY");
            case ErrorReason::scope:
                throw answered(ErrorReason::scope, "the gateway at " + at + " denied access" +
                                                       http + "; the API key needs the read scope");
            case ErrorReason::not_found:
            case ErrorReason::method:
            case ErrorReason::validation:
                throw answered(ErrorReason::config, "the server at " + at +
                                                        " is not the agency gateway" + http +
                                                        "; check the base URL and its path");
            case ErrorReason::upstream:
                if (e.http_status() >= 200 && e.http_status() < 300) {
                    throw impl.error(ErrorReason::config,
                                     "the server at " + at +
                                         " answered, but not with the gateway's discovery JSON; "
                                         "check the base URL and its path",
                                     e.http_status());
                }
                throw answered(ErrorReason::upstream,
                               "the gateway at " + at + " is failing" + http);
            default: throw;
        }
    }
}

namespace {

std::string away_text(const std::string& why, std::chrono::milliseconds wait) {
    return why + "; the server started without it and keeps trying (next in " + ms_text(wait) +
           "): the tools work once it answers. Try again shortly, or check the gateway URL "
           "(AGENCY_GATEWAY_URL) and the network (a VPN not up yet?)";
}

}  // namespace

void Client::Impl::fail_if_away() {
    if (!away.load(std::memory_order_acquire) || internal::t_reconnecting) return;
    std::string why;
    {
        std::lock_guard lock(discovery_mu);
        why = away_reason;
    }
    if (!why.empty()) throw error(ErrorReason::unavailable, why);
}

bool Client::away() const { return impl_->away.load(std::memory_order_acquire); }

void Client::serve_while_away(const std::string& why, std::shared_ptr<const Discovery> provisional,
                              std::chrono::milliseconds max_wait, std::function<void()> on_answer) {
    Impl* impl = impl_.get();
    const std::chrono::milliseconds first{1000};
    {
        std::lock_guard lock(impl->discovery_mu);
        impl->discovery = std::move(provisional);
        impl->discovery_at = impl->clock.steady();
        impl->discovery_failure = why;
        impl->away_reason = away_text(why, first);
    }
    impl->away.store(true, std::memory_order_release);
    std::lock_guard threads(impl->refresher_mu);
    impl->reconnecter = std::jthread(
        [this, impl, why, first, max_wait, on_answer = std::move(on_answer)](std::stop_token stop) {
            std::string said = why.substr(0, why.rfind(" ("));
            for (auto wait = first; impl->clock.sleep_for(wait, stop);) {
                wait = std::min(wait * 2, std::max(max_wait, first));
                try {
                    internal::t_reconnecting = true;
                    check(stop);  // stores the gateway's discovery, clears the failure
                    internal::t_reconnecting = false;
                } catch (const Error& e) {
                    internal::t_reconnecting = false;
                    if (e.reason() == ErrorReason::cancelled) return;
                    {
                        std::lock_guard lock(impl->discovery_mu);
                        impl->discovery_failure = e.what();
                        impl->away_reason = away_text(e.what(), wait);
                    }
                    // One line per new reason (its figures, "(2 attempts, ...)", aside).
                    const std::string text = e.what();
                    const std::string reason = text.substr(0, text.rfind(" ("));
                    if (said != reason) {
                        said = reason;
                        log::warn("{}; retrying every {} at most", text, ms_text(max_wait));
                    }
                    continue;
                }
                {
                    std::lock_guard lock(impl->discovery_mu);
                    impl->away_reason.clear();
                }
                impl->away.store(false, std::memory_order_release);
                log::info("the gateway at {} answered: the tools reach it now", impl->url.display);
                if (on_answer) on_answer();
                return;
            }
        });
}

}  // namespace agency::gateway
