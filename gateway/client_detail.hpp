// Internals of the gateway client that are pure functions (no network), kept apart so the
// tests can check them directly. Not part of the public interface.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gateway/actions.hpp"

namespace agency::gateway::detail {

struct BaseUrl {
    bool https = false;
    std::string host;  // without IPv6 brackets
    int port = 0;
    std::string path;     // "/api", or "/" when the URL had none
    std::string display;  // the URL as given, for messages (never carries credentials)
};

// Parses http(s)://host[:port][/path]. Throws Error{config} with one clear message.
BaseUrl parse_base_url(std::string_view url);

// RFC 3986 percent-encoding of a query component (unreserved characters kept).
void append_query_escaped(std::string& out, std::string_view value);

// String rendering used to compare a request field with a row field: strings as-is, numbers
// and booleans as JSON text; nullopt for null, objects and arrays (not comparable).
std::optional<std::string> scalar_text(const nlohmann::json& value);

// Whether the body carries every value the spec needs to find the record it would create.
bool can_verify(const ActionSpec& spec, const nlohmann::json& body);

// Whether `row` is the record an attempt sent at or after `not_before` would have written.
bool row_matches(const ActionSpec& spec, const nlohmann::json& body, const nlohmann::json& row,
                 std::chrono::sys_seconds not_before);

// What a check after an ambiguous failure concluded.
enum class Evidence {
    ran,      // what the action changes shows it ran
    not_run,  // conclusive: everything the check needs was there, and it did not run
    unclear,  // the check cannot tell: never a reason to send again
};

struct Verdict {
    Evidence evidence = Evidence::unclear;
    std::string detail;   // what was seen, for messages and Error::data
    nlohmann::json row;   // Evidence::ran: the record
};

// verify / confirm_only: judges one newest-first page (`data` array) of the written resource.
// A row that matches (and is not `claimed`) proves the action ran. "Not run" needs a page that
// settles it: rows in newest-first order of spec.order, every row touched since `not_before`
// carrying the match fields and the time field, and the page reaching back past `not_before`
// (or holding every row). A confirm_only spec is never not_run.
Verdict judge_rows(const ActionSpec& spec, const nlohmann::json& body,
                   const nlohmann::json& data, bool has_more, std::size_t limit,
                   std::chrono::sys_seconds not_before,
                   const std::function<bool(const nlohmann::json&)>& claimed);

// verify_state: the row the action acts on, read before the first POST and after the failure.
// Ran: it shows the effect and either did not before or one of the markers moved. Not run: it
// carries the effect's fields, does not show the effect, and no marker moved.
Verdict compare_state(const ActionSpec& spec, const nlohmann::json& before,
                      const nlohmann::json& after);

// Replaces every occurrence of `secret` in `text` (no-op for an empty secret).
std::string redact(std::string text, std::string_view secret);

}  // namespace agency::gateway::detail
