// The issuer's keys, found, cached and refreshed; tokens checked against them (see
// token_validator.hpp).
#include "auth/token_validator.hpp"

#include <mutex>
#include <stdexcept>

#include <httplib.h>
#include <jansson.h>
#include "base/log.hpp"
#include "base/log_summary.hpp"

#include <algorithm>
#include <cctype>

namespace agency::auth {

namespace {

FetchResult exchange(const std::string& url, httplib::Request req, std::chrono::milliseconds timeout,
                     std::size_t max_bytes) {
    FetchResult out;
    if (!is_secure_url(url)) {
        out.error = "not an https URL";
        return out;
    }
    const auto scheme_end = url.find("://") + 3;
    const auto path_at = url.find('/', scheme_end);
    const std::string origin = url.substr(0, path_at);
    req.path = path_at == std::string::npos ? "/" : url.substr(path_at);
    httplib::Client client(origin);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    client.set_follow_location(false);
    bool over = false;
    req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
        if (size > max_bytes - out.body.size()) {
            over = true;
            return false;
        }
        out.body.append(data, size);
        return true;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    const bool sent = client.send(req, res, error);
    if (over) {
        out.error = "the answer is larger than " + std::to_string(max_bytes) + " bytes";
    } else if (!sent) {
        out.error = httplib::to_string(error);
    } else {
        out.status = res.status;
    }
    return out;
}

// RFC 8414 section 3.1 (path inserted after the host), then OpenID Connect Discovery (both
// its appended form and the inserted one some providers serve).
std::vector<std::string> discovery_urls(const std::string& issuer) {
    const auto scheme_end = issuer.find("://") + 3;
    const auto path_at = issuer.find('/', scheme_end);
    const std::string origin = issuer.substr(0, path_at);
    std::string path = path_at == std::string::npos ? "" : issuer.substr(path_at);
    while (!path.empty() && path.back() == '/') path.pop_back();  // "https://h/" has no path
    return {origin + "/.well-known/oauth-authorization-server" + path,
            origin + path + "/.well-known/openid-configuration",
            origin + "/.well-known/openid-configuration" + path};
}

std::string form_encode(std::string_view text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

}  // namespace

FetchResult http_get(const std::string& url, std::chrono::milliseconds timeout,
                     std::size_t max_bytes) {
    httplib::Request req;
    req.method = "GET";
    req.headers.emplace("Accept", "application/json");
    return exchange(url, std::move(req), timeout, max_bytes);
}

FetchResult http_post_form(const std::string& url, const std::string& form,
                           const std::string& basic_user, const std::string& basic_password,
                           std::chrono::milliseconds timeout, std::size_t max_bytes) {
    httplib::Request req;
    req.method = "POST";
    req.headers.emplace("Accept", "application/json");
    req.headers.emplace("Content-Type", "application/x-www-form-urlencoded");
    // RFC 6749 section 2.3.1: the client id and secret are form-encoded before Basic.
    req.headers.insert(httplib::make_basic_authentication_header(form_encode(basic_user),
                                                                 form_encode(basic_password)));
    req.body = form;
    return exchange(url, std::move(req), timeout, max_bytes);
}

struct TokenValidator::Impl {
    ValidatorOptions options;
    TokenRules rules;
    const base::Clock& clock;

    // What was fetched, swapped whole under `mutex`; readers copy the pointers.
    std::mutex mutex;
    std::shared_ptr<const IssuerMetadata> metadata;
    std::shared_ptr<const KeySet> keys;
    std::int64_t keys_fetched_ms = 0;
    std::int64_t last_attempt_ms = -1;
    std::string last_error;
    // One fetch at a time; others wait for its result instead of fetching too.
    std::mutex fetch_mutex;
    log::RepeatedLines introspection_failures{clock};  // per token: summarised

    explicit Impl(ValidatorOptions o)
        : options(std::move(o)), clock(base::Clock::or_system(options.clock)) {
        // jansson (under libcjose) seeds its hash function on first use; seeding here, before
        // requests arrive on many threads, keeps that first use out of a race.
        json_object_seed(0);
        if (!is_secure_url(options.issuer))
            throw std::invalid_argument("the OAuth issuer must be an https URL (http only on a "
                                        "loopback address): " + options.issuer);
        if (options.resource.rfind("https://", 0) != 0 && options.resource.rfind("http://", 0) != 0)
            throw std::invalid_argument("the OAuth resource must be this server's absolute URL, "
                                        "e.g. https://mcp.example.com/mcp: " + options.resource);
        for (const auto& alg : options.algorithms)
            if (alg == "none" || alg.rfind("HS", 0) == 0)
                throw std::invalid_argument("the algorithm " + alg + " is never accepted");
        rules.issuer = options.issuer;
        rules.audience = options.resource;
        rules.algorithms = options.algorithms;
        rules.leeway_s = options.leeway.count();
        rules.client_claims = options.client_claims;
    }

    // Fetches the metadata (once it is known, only the keys); false with last_error set.
    bool fetch_locked() {
        const std::size_t max = options.limits.max_document_bytes;
        std::shared_ptr<const IssuerMetadata> meta;
        {
            std::lock_guard lock(mutex);
            meta = metadata;
        }
        std::string error;
        if (!meta) {
            for (const auto& url : discovery_urls(options.issuer)) {
                FetchResult got = http_get(url, options.timeout, max);
                if (got.status != 200) {
                    error = "discovery at " + url + ": " +
                            (got.status ? "HTTP " + std::to_string(got.status) : got.error);
                    continue;
                }
                try {
                    meta = std::make_shared<IssuerMetadata>(
                        parse_issuer_metadata(got.body, options.issuer, options.limits));
                    break;
                } catch (const std::invalid_argument& e) {
                    error = "discovery at " + url + ": " + e.what();
                }
            }
        }
        std::shared_ptr<const KeySet> fresh;
        if (meta && !meta->jwks_uri.empty()) {
            FetchResult got = http_get(meta->jwks_uri, options.timeout, max);
            if (got.status != 200) {
                error = "keys at " + meta->jwks_uri + ": " +
                        (got.status ? "HTTP " + std::to_string(got.status) : got.error);
            } else {
                try {
                    fresh = std::make_shared<KeySet>(KeySet::parse(got.body, options.limits));
                } catch (const std::invalid_argument& e) {
                    error = "keys at " + meta->jwks_uri + ": " + e.what();
                }
            }
        }
        std::lock_guard lock(mutex);
        last_attempt_ms = clock.steady_ms();
        if (meta) metadata = meta;
        if (fresh) {
            keys = fresh;
            keys_fetched_ms = last_attempt_ms;
            last_error.clear();
            return true;
        }
        last_error = error;
        log::warn("OAuth: cannot fetch the issuer's keys ({})", error);
        return false;
    }

    // Fetches again when `want_kid` is unknown or the keys are old, at most once per interval.
    void refresh_if_due(const std::string& want_kid) {
        auto due = [&] {
            const std::int64_t now = clock.steady_ms();
            if (last_attempt_ms >= 0 &&
                now - last_attempt_ms < options.refetch_interval.count() * 1000)
                return false;
            if (!keys) return true;
            if (now - keys_fetched_ms >= options.keys_max_age.count() * 1000) return true;
            return !want_kid.empty() && !keys->has_kid(want_kid);
        };
        {
            std::lock_guard lock(mutex);
            if (!due()) return;
        }
        std::lock_guard fetching(fetch_mutex);
        {
            std::lock_guard lock(mutex);
            if (!due()) return;  // another thread fetched while this one waited
        }
        fetch_locked();
    }

    Checked introspect(std::string_view token, const IssuerMetadata& meta) {
        Checked out;
        if (options.introspection_client_id.empty() || meta.introspection_endpoint.empty()) {
            out.failure = Failure::malformed;
            out.reason = "the token is not a JWT, and this server does not introspect tokens";
            return out;
        }
        FetchResult got = http_post_form(
            meta.introspection_endpoint,
            "token=" + form_encode(token) + "&token_type_hint=access_token",
            options.introspection_client_id, options.introspection_client_secret, options.timeout,
            options.limits.max_document_bytes);
        if (got.status != 200) {
            // Asked per token: once, then a summary per interval (the failure as the sample).
            const std::string why = got.status ? "HTTP " + std::to_string(got.status) : got.error;
            introspection_failures.write(log::Level::warn, "OAuth: introspection failed", why,
                                         "OAuth: introspection failed ({})", why);
            out.failure = Failure::unavailable;
            out.reason = "the authorization server's introspection endpoint cannot be reached";
            return out;
        }
        return read_introspection(got.body, rules, clock.unix_s(), options.limits);
    }
};

TokenValidator::TokenValidator(ValidatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
TokenValidator::~TokenValidator() = default;

const ValidatorOptions& TokenValidator::options() const { return impl_->options; }

Checked TokenValidator::validate(std::string_view token) const {
    Header header;
    std::string why;
    const bool jwt = read_header(token, impl_->options.limits, header, why);
    impl_->refresh_if_due(jwt ? header.kid : std::string());
    std::shared_ptr<const KeySet> keys;
    std::shared_ptr<const IssuerMetadata> meta;
    {
        std::lock_guard lock(impl_->mutex);
        keys = impl_->keys;
        meta = impl_->metadata;
    }
    Checked out;
    const bool opaque = !jwt && token.size() <= impl_->options.limits.max_token_bytes &&
                        std::count(token.begin(), token.end(), '.') != 2;
    if (opaque && meta && !impl_->options.introspection_client_id.empty())
        return impl_->introspect(token, *meta);
    if (!keys) {
        out.failure = Failure::unavailable;
        out.reason = "the authorization server's keys cannot be fetched; try again later";
        return out;
    }
    return verify_token(token, *keys, impl_->rules, impl_->clock.unix_s(), impl_->options.limits);
}

}  // namespace agency::auth
