#include "tools/pipeline/write_log.hpp"

#include <array>
#include <string_view>

#include "base/crypto.hpp"

namespace agency::tools {

namespace {

constexpr std::size_t kMaxMembers = 12;
constexpr std::size_t kMaxText = 80;
constexpr std::size_t kMaxKey = 40;
constexpr std::size_t kMaxDetail = 200;

// `text` cut to at most `max` bytes, never inside a UTF-8 character; "…" marks a cut.
std::string cut(std::string_view text, std::size_t max) {
    if (text.size() <= max) return std::string(text);
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return std::string(text.substr(0, end)) + "…";
}

bool secret_name(std::string_view key) {
    static constexpr std::array<std::string_view, 6> kWords = {
        "confirmation_id", "secret", "token", "password", "api_key", "authorization"};
    const std::string lower = [&] {
        std::string s(key);
        for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        return s;
    }();
    for (auto word : kWords)
        if (lower.find(word) != std::string::npos) return true;
    return false;
}

json short_value(const json& value) {
    if (value.is_string()) return cut(value.get_ref<const std::string&>(), kMaxText);
    if (value.is_array()) return "[" + std::to_string(value.size()) + " item(s)]";
    if (value.is_object()) return "{" + std::to_string(value.size()) + " member(s)}";
    return value;  // number, boolean, null
}

// The error object of a tool error's text ({"error": {...}}), or an empty object.
json error_of(const mcp::ToolResult& result) {
    if (result.content.empty() || !result.content[0].is_object()) return json::object();
    const json parsed = json::parse(result.content[0].value("text", ""), nullptr, false);
    if (!parsed.is_object() || !parsed.contains("error") || !parsed["error"].is_object())
        return json::object();
    return parsed["error"];
}

std::string text_of(const json& object, const char* key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {};
    return it->is_string() ? it->get<std::string>() : it->dump();
}

// `text` with every occurrence of `secret` replaced (a refusal's message quotes the id).
std::string without_secret(std::string text, const std::string& secret) {
    if (secret.empty()) return text;
    // Searching on after the mark: a caller's id may be part of the mark itself ("c").
    static constexpr std::string_view kMark = "[confirmation_id]";
    for (auto at = text.find(secret); at != std::string::npos;
         at = text.find(secret, at + kMark.size()))
        text.replace(at, secret.size(), kMark);
    return text;
}

std::string reference(const std::string& confirmation_id) {
    return confirmation_id.empty() ? std::string()
                                   : crypto::sha256_hex(confirmation_id).substr(0, 16);
}

// The summary with the confirmation id taken out wherever a caller put it (a value or a name
// other than confirmation_id).
json without_secret(const json& summary, const std::string& secret) {
    if (secret.empty() || !summary.is_object()) return summary;
    json out = json::object();
    for (const auto& [key, value] : summary.items())
        out[without_secret(key, secret)] =
            value.is_string() ? json(without_secret(value.get<std::string>(), secret)) : value;
    return out;
}

}  // namespace

std::string caller_clients_of(const mcp::Principal& caller) {
    if (caller.clients.empty()) return "*";
    std::string out;
    for (const auto& id : caller.clients) out += (out.empty() ? "" : ",") + id;
    return cut(out, 1000);
}

json args_summary(const json& args) {
    json out = json::object();
    if (!args.is_object()) return out;
    std::size_t left_out = 0;
    for (const auto& [key, value] : args.items()) {
        if (secret_name(key)) continue;
        if (out.size() == kMaxMembers) {
            ++left_out;
            continue;
        }
        out[cut(key, kMaxKey)] = short_value(value);
    }
    if (left_out > 0) out["…"] = std::to_string(left_out) + " more";
    return out;
}

state::WriteLogEntry write_log_entry(const std::string& tool, const json& args,
                                     const std::string& principal, const WriteTrail& trail,
                                     const mcp::ToolResult& result,
                                     const std::string& record_field) {
    state::WriteLogEntry e;
    e.principal = principal;
    e.tool = tool;
    e.client_id = args.is_object() ? cut(string_arg(args, "client_id"), 200) : std::string();
    json stripped = args;
    if (stripped.is_object()) stripped.erase("confirmation_id");
    e.args_digest = state::args_digest(stripped);
    e.args_summary = without_secret(args_summary(args), trail.confirmation_id);
    e.confirmation = trail.confirmation;
    e.confirmation_ref = reference(trail.confirmation_id);
    e.replayed = trail.replayed;
    e.caller_clients = trail.caller_clients;
    if (result.is_error) {
        const json error = error_of(result);
        e.reason = text_of(error, "reason");
        e.detail =
            cut(without_secret(text_of(error, "message"), trail.confirmation_id), kMaxDetail);
        e.outcome = e.reason == "outcome_unknown"  ? "unknown"
                    : trail.sent || trail.replayed ? "failed"
                                                   : "refused";
        return e;
    }
    const json data = json::parse(result.structured_text, nullptr, false);
    const json answer = data.is_object() ? data : json::object();
    if (!trail.sent && !trail.replayed) {
        // The only answer without the gateway: a preview asking for a confirmation.
        e.outcome = "preview";
        e.confirmation_ref = reference(text_of(answer, "confirmation_id"));
        e.detail = "confirmation asked for; nothing was done";
        return e;
    }
    e.outcome = "ok";
    if (!record_field.empty()) e.record_id = cut(text_of(answer, record_field.c_str()), 200);
    e.detail = cut(text_of(answer, "status"), kMaxDetail);
    return e;
}

}  // namespace agency::tools
