// The kit every tool entry is built with: tool errors (a gateway failure as a tool error a
// model can act on), signed list cursors and small argument helpers. The argument checks are
// in input_validation.cpp; registration (add_tool) is the pipeline's, in registration.cpp.
#include "tools/kit/tool_kit.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <variant>

#include "base/text.hpp"

namespace agency::tools {

// --- errors ----------------------------------------------------------------------------------

namespace {

// What to do next after an error of `reason`, for the text a model reads (some hosts drop
// everything but the text of an error): "" for a reason whose message says it all.
std::string_view next_step(std::string_view reason) {
    static constexpr std::pair<std::string_view, std::string_view> kNext[] = {
        {"validation", "correct the arguments as the message says, then call again"},
        {"not_found",
         "check the id: the list tools (list_clients first) give the valid "
         "ones"},
        {"scope", "this key may not do it: use a read tool, or ask the operator for the scope"},
        {"rate_limited", "wait (retry_after_seconds when given), then call again"},
        {"unavailable", "the gateway is unreachable: try again in a minute"},
        {"upstream", "the gateway failed: try again later, and tell the operator if it persists"},
        {"gateway", "the gateway failed: try again later, and tell the operator if it persists"},
        {"outcome_unknown",
         "do not repeat it blindly: check whether it ran, as the message "
         "says, first"},
        {"cancelled", "call again if it is still wanted"},
        {"auth", "the operator must fix the server's gateway key"},
    };
    for (const auto& [name, next] : kNext)
        if (name == reason) return next;
    return {};
}

}  // namespace

mcp::ToolResult tool_error(std::string_view reason, const std::string& message,
                           const json& details) {
    json error = {{"reason", reason}, {"message", message}};
    if (details.is_object())
        for (const auto& [k, v] : details.items()) error[k] = v;
    if (const std::string_view next = next_step(reason); !next.empty() && !error.contains("next"))
        error["next"] = next;
    return mcp::ToolResult::text(json{{"error", std::move(error)}}.dump(), true);
}

mcp::ToolResult tool_error(const gateway::Error& e) {
    using R = gateway::ErrorReason;
    std::string_view reason;
    switch (e.reason()) {
        case R::validation: reason = "validation"; break;
        case R::scope: reason = "scope"; break;
        case R::not_found: reason = "not_found"; break;
        case R::rate_limited: reason = "rate_limited"; break;
        case R::unavailable: reason = "unavailable"; break;
        case R::outcome_unknown: reason = "outcome_unknown"; break;
        case R::cancelled: reason = "cancelled"; break;
        case R::auth: reason = "auth"; break;
        case R::method:
        case R::upstream:
        case R::config: reason = "upstream"; break;
    }
    json details = json::object();
    // The gateway's words may quote third-party text: cleaned like its rows.
    if (!e.gateway_error().empty())
        details["gateway_error"] = base::clean_untrusted_text(e.gateway_error());
    if (e.http_status()) details["http_status"] = e.http_status();
    if (e.status_code()) details["status_code"] = *e.status_code();
    if (!e.data().is_null()) details["data"] = e.data();
    if (e.reason() == R::auth)  // the operator's to fix, mid-session as at start-up
        return tool_error(reason,
                          base::clean_untrusted_text(e.what()) +
                              " The gateway refused this server's API key: it is expired, "
                              "revoked or wrong. The operator must check AGENCY_API_KEY (a new "
                              "key comes from the agency's app settings) and restart the server.",
                          details);
    return tool_error(reason, base::clean_untrusted_text(e.what()), details);
}

// --- cursors ---------------------------------------------------------------------------------

namespace {

// Today's words for each refusal, kept as users have always read them.
std::string cursor_refusal(base::TokenRefusal refusal) {
    switch (refusal) {
        case base::TokenRefusal::other_subject: return "it belongs to another tool";
        case base::TokenRefusal::other_scope: return "it belongs to another client_id";
        case base::TokenRefusal::other_principal: return "it was issued to another caller";
        case base::TokenRefusal::other_arguments: return "it was issued for other filter arguments";
        case base::TokenRefusal::expired: return "it has expired";
        case base::TokenRefusal::altered:
        case base::TokenRefusal::spent: break;  // cursors are not single use
    }
    return "it was altered or was not issued by this server";
}

}  // namespace

Toolbox::Toolbox(std::shared_ptr<gateway::Client> gateway, Settings settings)
    : gateway_(std::move(gateway)),
      settings_(std::move(settings)),
      cursor_sealer_(settings_.secret, "cursor"),
      approval_sealer_(settings_.secret, "view-approval") {}

std::string Toolbox::issue_cursor(const CursorBinding& b, std::int64_t offset,
                                  const json& extra) const {
    const std::string filters = b.filters ? b.filters->dump() : "";
    json body = {{"o", offset}};
    if (!extra.is_null()) body["x"] = extra;
    return cursor_sealer_.seal(
        {.subject = b.tool, .scope = b.client_id, .principal = b.principal, .arguments = filters},
        settings_.cursor_ttl, body);
}

CursorPosition Toolbox::open_cursor(const CursorBinding& b, const std::string& token) const {
    auto refuse = [](const std::string& why) {
        return mcp::RpcError(mcp::error_code::invalid_params,
                             "invalid cursor: " + why +
                                 "; pass back the next_cursor of the previous answer unchanged, "
                                 "with the same arguments, or omit it to start over");
    };
    const std::string filters = b.filters ? b.filters->dump() : "";
    auto opened = cursor_sealer_.open(
        token,
        {.subject = b.tool, .scope = b.client_id, .principal = b.principal, .arguments = filters});
    if (auto* refusal = std::get_if<base::TokenRefusal>(&opened))
        throw refuse(cursor_refusal(*refusal));
    const json& body = std::get<base::OpenedToken>(opened).body;
    auto offset = body.is_object() ? body.find("o") : body.end();
    if (!body.is_object() || offset == body.end() || !offset->is_number_integer() ||
        offset->get<std::int64_t>() < 0)
        throw refuse("it is malformed");
    return {offset->get<std::int64_t>(), body.value("x", json())};
}

std::string iso_time(std::int64_t unix_seconds) {
    return base::format_utc_time(
        std::chrono::system_clock::time_point(std::chrono::seconds(unix_seconds)));
}

std::string principal_of(const mcp::RequestContext& ctx) { return ctx.principal.name; }

std::string string_arg(const json& args, std::string_view name) {
    auto it = args.find(name);
    if (it == args.end() || it->is_null()) return {};
    return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace agency::tools
