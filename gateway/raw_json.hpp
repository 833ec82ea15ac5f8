// A row member's raw text as simdjson's on-demand parser shows it: shared by the page walk
// (page_walk.cpp) and the row cut (row_cut.cpp). Private to gateway/.
#pragma once

#include <string_view>

#include <simdjson.h>

namespace agency::gateway::raw_json {

// simdjson's raw views run up to the next token, so they may carry whitespace.
inline std::string_view trim_end(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                             text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

// A value's text as the row holds it, of any type (consumes containers); `type` is its type.
inline simdjson::error_code raw_value(simdjson::ondemand::value value,
                                      simdjson::ondemand::json_type& type, std::string_view& raw) {
    namespace od = simdjson::ondemand;
    if (auto e = value.type().get(type)) return e;
    if (type == od::json_type::object) {
        od::object object;
        if (auto e = value.get_object().get(object)) return e;
        if (auto e = object.raw_json().get(raw)) return e;
    } else if (type == od::json_type::array) {
        od::array array;
        if (auto e = value.get_array().get(array)) return e;
        if (auto e = array.raw_json().get(raw)) return e;
    } else {
        raw = value.raw_json_token();
    }
    raw = trim_end(raw);
    return simdjson::SUCCESS;
}

}  // namespace agency::gateway::raw_json
