#include "gateway/client_detail.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "gateway/client.hpp"
#include "base/clock.hpp"

namespace agency::gateway::detail {

namespace {

constexpr std::string_view kUrlShape = "http(s)://host[:port][/path]";

Error config_error(std::string message) {
    return Error(ErrorReason::config, std::move(message));
}

std::string in_quotes(std::string_view s) {
    return "'" + std::string(s) + "'";
}

bool is_host_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_';
}

bool is_ipv6_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isxdigit(u) != 0 || c == ':' || c == '.';
}

}  // namespace

BaseUrl parse_base_url(std::string_view url) {
    if (url.empty()) {
        throw config_error("the gateway URL is empty; expected " + std::string(kUrlShape));
    }
    const std::string shown(url);
    if (std::any_of(url.begin(), url.end(), [](char c) {
            return std::isspace(static_cast<unsigned char>(c)) != 0 ||
                   std::iscntrl(static_cast<unsigned char>(c)) != 0;
        })) {
        throw config_error("the gateway URL " + in_quotes(shown) +
                           " contains whitespace or control characters");
    }
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0) {
        throw config_error("the gateway URL " + in_quotes(shown) + " has no scheme; expected " +
                           std::string(kUrlShape));
    }
    std::string scheme(url.substr(0, scheme_end));
    std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    BaseUrl out;
    if (scheme == "https") {
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
        throw config_error("the gateway URL " + in_quotes(shown) +
                           " needs TLS, which this build does not support");
#endif
        out.https = true;
    } else if (scheme != "http") {
        throw config_error("the gateway URL " + in_quotes(shown) + " uses the unsupported scheme " +
                           in_quotes(scheme) + "; use http or https");
    }

    const auto rest = url.substr(scheme_end + 3);
    const auto authority_end = rest.find_first_of("/?#");
    const auto authority = rest.substr(0, authority_end);
    const auto tail =
        authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
    if (authority.find('@') != std::string_view::npos) {
        // Not echoed: the part before '@' may be a password or a key.
        throw config_error(
            "the gateway URL must not carry credentials (user:password@host); "
            "give the API key separately");
    }
    if (tail.find_first_of("?#") != std::string_view::npos) {
        throw config_error("the gateway URL " + in_quotes(shown) +
                           " must not contain a query or fragment; expected " +
                           std::string(kUrlShape));
    }

    std::string_view host;
    std::string_view port_text;
    bool has_port = false;
    if (!authority.empty() && authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            throw config_error("the gateway URL " + in_quotes(shown) +
                               " has an unterminated IPv6 address");
        }
        host = authority.substr(1, close - 1);
        if (host.empty() || !std::all_of(host.begin(), host.end(), is_ipv6_char)) {
            throw config_error("the gateway URL " + in_quotes(shown) + " has an invalid host " +
                               in_quotes(authority.substr(0, close + 1)));
        }
        const auto after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                throw config_error("the gateway URL " + in_quotes(shown) + " has an invalid host " +
                                   in_quotes(authority));
            }
            has_port = true;
            port_text = after.substr(1);
        }
    } else {
        const auto colon = authority.find(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) {
            has_port = true;
            port_text = authority.substr(colon + 1);
        }
        if (host.empty()) {
            throw config_error("the gateway URL " + in_quotes(shown) + " has no host; expected " +
                               std::string(kUrlShape));
        }
        if (!std::all_of(host.begin(), host.end(), is_host_char)) {
            throw config_error("the gateway URL " + in_quotes(shown) + " has an invalid host " +
                               in_quotes(host));
        }
    }

    out.port = out.https ? 443 : 80;
    if (has_port) {
        int port = 0;
        const auto* first = port_text.data();
        const auto* last = port_text.data() + port_text.size();
        const auto [ptr, ec] = std::from_chars(first, last, port);
        if (port_text.empty() || ec != std::errc{} || ptr != last || port < 1 || port > 65535 ||
            port_text.front() == '+' || port_text.front() == '-') {
            throw config_error("the gateway URL " + in_quotes(shown) + " has an invalid port " +
                               in_quotes(port_text) + "; expected a number from 1 to 65535");
        }
        out.port = port;
    }
    out.host = std::string(host);
    out.path = tail.empty() ? "/" : std::string(tail);
    out.display = shown;
    return out;
}

void append_query_escaped(std::string& out, std::string_view value) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char c : value) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(kHex[u >> 4]);
            out.push_back(kHex[u & 0x0F]);
        }
    }
}

std::optional<std::string> scalar_text(const nlohmann::json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number() || value.is_boolean()) return value.dump();
    return std::nullopt;
}

bool can_verify(const ActionSpec& spec, const nlohmann::json& body) {
    if (spec.resend == ResendRule::retry_safe || spec.resend == ResendRule::unknown ||
        spec.resource.empty()) {
        return false;
    }
    if (spec.resend == ResendRule::verify_state) {
        if (spec.filter_body_field.empty()) return false;
    } else if (spec.time_field.empty() || spec.order.empty()) {
        return false;
    }
    const auto has_scalar = [&](std::string_view field) {
        const auto it = body.find(std::string(field));
        return it != body.end() && scalar_text(*it).has_value();
    };
    if (!spec.filter_body_field.empty() && !has_scalar(spec.filter_body_field)) return false;
    for (const auto& m : spec.match) {
        if (m.row_field.empty() || m.body_field.empty()) continue;
        if (!has_scalar(m.body_field)) return false;
    }
    return true;
}

bool row_matches(const ActionSpec& spec, const nlohmann::json& body, const nlohmann::json& row,
                 std::chrono::sys_seconds not_before) {
    if (!row.is_object()) return false;
    const auto time_it = row.find(std::string(spec.time_field));
    if (time_it == row.end() || !time_it->is_string()) return false;
    const auto at = base::parse_utc_time(time_it->get_ref<const std::string&>());
    if (!at || *at < not_before) return false;
    for (const auto& m : spec.match) {
        if (m.row_field.empty()) continue;
        std::optional<std::string> expected;
        if (m.body_field.empty()) {
            expected = std::string(m.constant);
        } else {
            const auto it = body.find(std::string(m.body_field));
            if (it == body.end()) return false;
            expected = scalar_text(*it);
        }
        const auto row_it = row.find(std::string(m.row_field));
        if (!expected || row_it == row.end()) return false;
        const auto actual = scalar_text(*row_it);
        if (!actual || *actual != *expected) return false;
    }
    if (!spec.filter_body_field.empty()) {
        // The verification read filters by id already; checked again so a gateway that ignored
        // the filter cannot make another record look like ours.
        const auto want_it = body.find(std::string(spec.filter_body_field));
        const auto id_it = row.find("id");
        if (want_it == body.end() || id_it == row.end()) return false;
        const auto want = scalar_text(*want_it);
        if (!want || scalar_text(*id_it) != want) return false;
    }
    return true;
}

namespace {

std::string fields_text(const ActionSpec& spec) {
    std::string out;
    for (const auto& m : spec.match) {
        if (m.row_field.empty()) continue;
        if (!out.empty()) out += ", ";
        out += m.row_field;
    }
    return out;
}

// The row's value of `field` as compared text; nullopt when absent, null or not a scalar.
std::optional<std::string> field_text(const nlohmann::json& row, std::string_view field) {
    if (!row.is_object()) return std::nullopt;
    const auto it = row.find(std::string(field));
    return it == row.end() ? std::nullopt : scalar_text(*it);
}

std::string id_note(const nlohmann::json& row) {
    const auto id = field_text(row, "id");
    return id ? " (id " + *id + ")" : std::string{};
}

}  // namespace

Verdict judge_rows(const ActionSpec& spec, const nlohmann::json& body,
                   const nlohmann::json& data, bool has_more, std::size_t limit,
                   std::chrono::sys_seconds not_before,
                   const std::function<bool(const nlohmann::json&)>& claimed) {
    Verdict out;
    const std::string resource(spec.resource);
    const std::string since = base::format_utc_time(not_before);
    std::string unsettled;  // why a page without our record still does not settle it
    std::optional<std::chrono::sys_seconds> previous;
    std::optional<std::chrono::sys_seconds> oldest;
    const std::size_t rows = data.is_array() ? data.size() : 0;
    for (std::size_t i = 0; i < rows; ++i) {
        const auto& row = data[i];
        if (row_matches(spec, body, row, not_before) && !(claimed && claimed(row))) {
            out.evidence = Evidence::ran;
            out.row = row;
            out.detail = "found the record in " + resource + id_note(row);
            return out;
        }
        if (!unsettled.empty()) continue;
        const auto order_text = field_text(row, spec.order);
        const auto at = order_text ? base::parse_utc_time(*order_text) : std::nullopt;
        if (!at) {
            unsettled = "rows of " + resource + " carry no readable " + std::string(spec.order);
            continue;
        }
        if (previous && *at > *previous) {
            unsettled = "the rows of " + resource + " did not come newest first";
            continue;
        }
        previous = at;
        oldest = at;
        if (*at < not_before) continue;
        // A row written since the first attempt: it must show that it is not ours.
        if (!row.is_object() || !row.contains(std::string(spec.time_field))) {
            unsettled = "rows of " + resource + " carry no " + std::string(spec.time_field);
            continue;
        }
        for (const auto& m : spec.match) {
            if (!m.row_field.empty() && !field_text(row, m.row_field)) {
                unsettled = "rows of " + resource + " do not all carry " + fields_text(spec);
                break;
            }
        }
    }
    const bool whole_window = rows < limit || !has_more || (oldest && *oldest < not_before);
    if (unsettled.empty() && !whole_window) {
        unsettled = "the newest " + std::to_string(rows) + " rows of " + resource +
                    " were all written since " + since;
    }
    out.detail = "no matching record in the newest " + std::to_string(rows) + " rows of " +
                 resource + " at or after " + since;
    if (spec.resend == ResendRule::confirm_only) {
        out.detail += ", and the gateway is not known to record one, so its absence proves "
                      "nothing";
    } else if (!unsettled.empty()) {
        out.detail += ", but that does not settle it: " + unsettled;
    } else {
        out.evidence = Evidence::not_run;
    }
    return out;
}

Verdict compare_state(const ActionSpec& spec, const nlohmann::json& before,
                      const nlohmann::json& after) {
    Verdict out;
    const std::string what = std::string(spec.resource) + " row" + id_note(after);
    if (!after.is_object()) {
        out.detail = "the " + std::string(spec.resource) + " row it acts on could not be found "
                                                           "afterwards";
        return out;
    }
    bool observable = false;
    const auto shows_effect = [&](const nlohmann::json& row, bool note) {
        bool shows = false;
        for (const auto& m : spec.match) {
            if (m.row_field.empty()) continue;
            const auto value = field_text(row, m.row_field);
            if (note && value) observable = true;
            if (value && *value == m.constant) shows = true;
        }
        return shows;
    };
    const bool now = shows_effect(after, true);
    const bool then = shows_effect(before, false);
    std::string moved;
    for (const auto& marker : spec.markers) {
        if (marker.empty()) continue;
        if (field_text(before, marker) != field_text(after, marker)) {
            moved = std::string(marker);
            break;
        }
    }
    std::string effect;
    for (const auto& m : spec.match) {
        if (m.row_field.empty()) continue;
        effect += effect.empty() ? "" : " or ";
        effect += std::string(m.row_field) + " " + std::string(m.constant);
    }
    const auto state = [&](const nlohmann::json& row) {
        std::string text;
        for (const auto& m : spec.match) {
            if (m.row_field.empty()) continue;
            if (!text.empty()) text += ", ";
            text += std::string(m.row_field) + " " +
                    field_text(row, m.row_field).value_or("(none)");
        }
        return text;
    };
    if (!observable) {
        out.detail = "the " + what + " carries none of the fields that show its effect (" +
                     fields_text(spec) + ")";
        return out;
    }
    if (now && !then) {
        out.evidence = Evidence::ran;
        out.detail = "the " + what + " now shows " + state(after) + ", which it did not before "
                                                                  "the first attempt";
    } else if (now && !moved.empty()) {
        out.evidence = Evidence::ran;
        out.detail = "the " + what + " shows " + state(after) + " and its " + moved +
                     " moved since the first attempt";
    } else if (now) {
        out.detail = "the " + what + " already showed " + state(after) +
                     " before the first attempt and nothing moved since";
    } else if (!moved.empty()) {
        out.detail = "the " + what + " changed (" + moved + ") but shows " + state(after) +
                     ", not " + effect;
    } else {
        out.evidence = Evidence::not_run;
        out.detail = "the " + what + " still shows " + state(after) + ", unchanged since the "
                                                                      "first attempt";
    }
    if (out.evidence == Evidence::ran) out.row = after;
    return out;
}

std::string redact(std::string text, std::string_view secret) {
    if (secret.empty()) return text;
    std::size_t pos = 0;
    while ((pos = text.find(secret, pos)) != std::string::npos) {
        text.replace(pos, secret.size(), "[redacted]");
        pos += 10;
    }
    return text;
}

}  // namespace agency::gateway::detail
