#include "gateway/json_parse.hpp"

#include <cstdint>
#include <stdexcept>

#include <simdjson.h>

namespace agency::gateway {

namespace {

nlohmann::json to_json(simdjson::dom::element e) {
    using simdjson::dom::element_type;
    switch (e.type()) {
        case element_type::OBJECT: {
            auto out = nlohmann::json::object();
            for (const auto field : simdjson::dom::object(e)) {
                out[std::string(field.key)] = to_json(field.value);  // the last of a key wins
            }
            return out;
        }
        case element_type::ARRAY: {
            auto out = nlohmann::json::array();
            for (const auto item : simdjson::dom::array(e)) out.push_back(to_json(item));
            return out;
        }
        case element_type::STRING: return std::string(std::string_view(e));
        case element_type::INT64: {
            // nlohmann keeps an integer without a sign as unsigned.
            const auto i = std::int64_t(e);
            if (i >= 0) return static_cast<std::uint64_t>(i);
            return i;
        }
        case element_type::UINT64: return std::uint64_t(e);
        case element_type::DOUBLE: return double(e);
        case element_type::BOOL: return bool(e);
        case element_type::NULL_VALUE: return nullptr;
    }
    return nullptr;
}

nlohmann::json parse(const char* data, std::size_t size, bool padded, bool allow_exceptions) {
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element root;
    const auto error = parser.parse(data, size, !padded).get(root);
    // A parser keeps the size of the largest text it has read: a huge gateway answer's is let
    // go (the parser is not used past this function).
    struct Trim {
        ~Trim() {
            if (parser.capacity() > (8u << 20)) parser = simdjson::dom::parser{};
        }
    } trim;
    if (error == simdjson::SUCCESS) return to_json(root);
    // Too deep for simdjson is too deep for the recursive code after it: never handed to
    // nlohmann's parser (whose only use here is its error messages).
    if (error == simdjson::DEPTH_ERROR) {
        if (allow_exceptions) throw std::runtime_error("JSON nested too deeply");
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
    return nlohmann::json::parse(data, data + size, nullptr, allow_exceptions);
}

}  // namespace

nlohmann::json parse_json(std::string_view text, bool allow_exceptions) {
    return parse(text.data(), text.size(), false, allow_exceptions);
}

nlohmann::json parse_json(const std::string& text, bool allow_exceptions) {
    const bool padded = text.capacity() >= text.size() + simdjson::SIMDJSON_PADDING;
    return parse(text.data(), text.size(), padded, allow_exceptions);
}

}  // namespace agency::gateway
