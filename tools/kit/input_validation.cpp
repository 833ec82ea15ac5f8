// What a tool's arguments are checked against: the embedded schemas (schemas/, found by name)
// and InputValidator, which runs valijson for the structure and RE2 and plain code for the
// string rules valijson does not check (patterns, formats), and words each refusal as one
// actionable line naming the argument, what it got and what it expects.
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <re2/re2.h>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "base/log.hpp"
#include "base/text.hpp"
#include "gateway/json_parse.hpp"
#include "tools/kit/schemas.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// --- schemas ---------------------------------------------------------------------------------

const json& schema(std::string_view name) {
    static std::mutex mutex;
    static std::unordered_map<std::string, json> parsed;  // references into it stay valid
    {
        std::lock_guard lock(mutex);
        auto it = parsed.find(std::string(name));
        if (it != parsed.end()) return it->second;
    }
    for (const auto& s : embedded_schemas()) {
        if (s.name != name) continue;
        // Parsed outside the lock, so start-up's registration and the thread warming the other
        // schemas parse side by side; if both parse one, the first stored is kept.
        json value = gateway::parse_json(s.text, true);
        std::lock_guard lock(mutex);
        return parsed.emplace(std::string(name), std::move(value)).first->second;
    }
    throw std::out_of_range("no embedded schema named " + std::string(name));
}

bool has_schema(std::string_view name) {
    for (const auto& s : embedded_schemas())
        if (s.name == name) return true;
    return false;
}

// --- validation ------------------------------------------------------------------------------

namespace {

// What a property schema allows, in words: "an integer from 1 to 1000".
std::string describe(const json& prop) {
    if (!prop.is_object()) return "any value";
    std::vector<std::string> parts;
    // "type" may be a list such as ["string", "null"].
    std::string type;
    if (auto t = prop.find("type"); t != prop.end()) {
        if (t->is_string()) {
            type = t->get<std::string>();
        } else if (t->is_array()) {
            for (const auto& one : *t)
                if (one.is_string()) type += (type.empty() ? "" : " or ") + one.get<std::string>();
        }
    }
    if (auto e = prop.find("enum"); e != prop.end() && e->is_array()) {
        std::vector<std::string> values;
        for (const auto& v : *e) values.push_back(v.dump());
        return "one of " + base::join(values);
    }
    std::string what = type.empty() ? "a value" : (type == "integer" ? "an integer" : "a " + type);
    if (auto f = prop.find("format"); f != prop.end() && f->is_string()) {
        std::string format = f->get<std::string>();
        what += format == "date" ? " date YYYY-MM-DD" : " (" + format + ")";
    }
    if (prop.contains("minimum") && prop.contains("maximum"))
        what += " from " + prop["minimum"].dump() + " to " + prop["maximum"].dump();
    else if (prop.contains("minimum"))
        what += " of at least " + prop["minimum"].dump();
    else if (prop.contains("maximum"))
        what += " of at most " + prop["maximum"].dump();
    if (prop.contains("minLength") || prop.contains("maxLength"))
        what += " of " + prop.value("minLength", json(0)).dump() + " to " +
                prop.value("maxLength", json("any")).dump() + " characters";
    if (auto p = prop.find("pattern"); p != prop.end() && p->is_string())
        what += " matching " + p->get<std::string>();
    return what;
}

}  // namespace

// `pattern` and `format` are checked here, not by valijson: its std::regex recurses once per
// character (a long argument overflowed the stack) and its `format` read non-strings as
// strings. RE2 matches in linear time; the formats are plain code.
struct StringRules {
    std::unique_ptr<RE2> pattern;  // JSON Schema patterns are unanchored searches
    std::string format;            // "date"; other formats are annotations only
    std::map<std::string, StringRules, std::less<>> properties;
    std::unique_ptr<StringRules> items;
    std::unique_ptr<StringRules> additional;  // additionalProperties as a schema

    bool empty() const {
        return !pattern && format.empty() && properties.empty() && !items && !additional;
    }
};

namespace {

bool is_date(std::string_view s) {
    auto digits = [&](std::size_t at, std::size_t n) {
        for (std::size_t i = at; i < at + n; ++i)
            if (s[i] < '0' || s[i] > '9') return false;
        return true;
    };
    if (s.size() != 10 || s[4] != '-' || s[7] != '-' || !digits(0, 4) || !digits(5, 2) ||
        !digits(8, 2))
        return false;
    const int year = std::stoi(std::string(s.substr(0, 4)));
    const int month = (s[5] - '0') * 10 + (s[6] - '0');
    const int day = (s[8] - '0') * 10 + (s[9] - '0');
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1]) return false;
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return !(month == 2 && day == 29 && !leap);
}

// Moves `pattern` and `format` out of `schema` (a copy valijson will compile) into rules, for
// the places a value's path can be followed: properties, items, additionalProperties.
StringRules take_string_rules(json& schema, const std::string& where) {
    StringRules rules;
    if (!schema.is_object()) return rules;
    if (auto p = schema.find("pattern"); p != schema.end() && p->is_string()) {
        RE2::Options options;
        options.set_log_errors(false);
        rules.pattern = std::make_unique<RE2>(p->get<std::string>(), options);
        if (!rules.pattern->ok())
            throw std::invalid_argument("schema pattern at " + where +
                                        " is not supported: " + rules.pattern->error());
        schema.erase(p);
    }
    if (auto f = schema.find("format"); f != schema.end() && f->is_string()) {
        rules.format = f->get<std::string>();
        schema.erase(f);
    }
    if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
        for (auto& [name, sub] : props->items()) {
            StringRules child = take_string_rules(sub, where + "/properties/" + name);
            if (!child.empty()) rules.properties.emplace(name, std::move(child));
        }
    }
    if (auto items = schema.find("items"); items != schema.end() && items->is_object()) {
        StringRules child = take_string_rules(*items, where + "/items");
        if (!child.empty()) rules.items = std::make_unique<StringRules>(std::move(child));
    }
    if (auto extra = schema.find("additionalProperties");
        extra != schema.end() && extra->is_object()) {
        StringRules child = take_string_rules(*extra, where + "/additionalProperties");
        if (!child.empty()) rules.additional = std::make_unique<StringRules>(std::move(child));
    }
    // Elsewhere (combinators, definitions) a value's path cannot be followed from here: refuse
    // the schema rather than drop a rule or leave it to std::regex.
    for (const char* key : {"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "definitions",
                            "$defs", "patternProperties", "dependencies"}) {
        if (auto it = schema.find(key);
            it != schema.end() && it->dump().find("\"pattern\"") != std::string::npos)
            throw std::invalid_argument("schema at " + where + ": a pattern under " + key +
                                        " is not supported");
    }
    return rules;
}

// The first value that breaks a rule, and where it is ("from", "keywords[2]").
struct Violation {
    std::string path;
    const json* value = nullptr;
};

std::optional<Violation> check_string_rules(const StringRules& rules, const json& value,
                                            const std::string& path) {
    if (value.is_string() && (rules.pattern || !rules.format.empty())) {
        const auto& text = value.get_ref<const std::string&>();
        if ((rules.pattern && !RE2::PartialMatch(text, *rules.pattern)) ||
            (rules.format == "date" && !is_date(text)))
            return Violation{path, &value};
    }
    if (value.is_object()) {
        for (const auto& [key, item] : value.items()) {
            auto found = rules.properties.find(key);
            const StringRules* sub =
                found != rules.properties.end() ? &found->second : rules.additional.get();
            if (!sub) continue;
            if (auto bad = check_string_rules(*sub, item, path.empty() ? key : path + "." + key))
                return bad;
        }
    } else if (value.is_array() && rules.items) {
        for (std::size_t i = 0; i < value.size(); ++i)
            if (auto bad = check_string_rules(*rules.items, value[i],
                                              path + "[" + std::to_string(i) + "]"))
                return bad;
    }
    return std::nullopt;
}

// A value as the message quotes it: long ones cut, so an answer never echoes a huge argument.
std::string quote_value(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    constexpr std::size_t kMax = 120;
    if (text.size() > kMax)
        text = text.substr(0, kMax) + "... (" + std::to_string(text.size()) + " characters)";
    return text;
}

}  // namespace

struct InputValidator::Impl {
    json owned;
    const json* schema_ptr = &owned;  // `owned`, or a schema that outlives the validator
    // Compiled on the first validation: start-up registers every tool, and compiling all their
    // schemas up front was a tenth of a cold start's instructions.
    std::once_flag compile_once;
    valijson::Schema compiled;
    StringRules string_rules;
    std::vector<std::string> properties;
    std::vector<std::string> required;
    bool closed = false;  // additionalProperties: false

    const valijson::Schema& compiled_schema() {
        std::call_once(compile_once, [this] {
            json plain = *schema_ptr;
            string_rules = take_string_rules(plain, "#");
            valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
            valijson::adapters::NlohmannJsonAdapter adapter(plain);
            parser.populateSchema(adapter, compiled);
        });
        return compiled;
    }
};

InputValidator::InputValidator(json schema) : impl_(std::make_unique<Impl>()) {
    impl_->owned = std::move(schema);
    read_outline();
}

InputValidator InputValidator::borrowing(const json& schema) {
    InputValidator v;
    v.impl_->schema_ptr = &schema;
    v.read_outline();
    return v;
}

InputValidator::InputValidator() : impl_(std::make_unique<Impl>()) {}

void InputValidator::read_outline() {
    const json& schema_json = *impl_->schema_ptr;
    if (auto p = schema_json.find("properties"); p != schema_json.end() && p->is_object())
        for (const auto& [k, v] : p->items()) impl_->properties.push_back(k);
    if (auto r = schema_json.find("required"); r != schema_json.end() && r->is_array())
        for (const auto& k : *r) impl_->required.push_back(k.get<std::string>());
    impl_->closed = schema_json.value("additionalProperties", json(true)) == json(false);
}

InputValidator::~InputValidator() = default;
InputValidator::InputValidator(InputValidator&&) noexcept = default;

std::string InputValidator::validate(const json& args) const {
    // A reference into the schema (value() would copy the properties on every call).
    static const json no_properties = json::object();
    const json& schema_json = *impl_->schema_ptr;
    const auto found = schema_json.find("properties");
    const json& props = found != schema_json.end() ? *found : no_properties;
    if (!args.is_object())
        return "arguments must be an object of named arguments, got " + quote_value(args);
    if (impl_->closed) {
        for (const auto& [key, value] : args.items()) {
            if (!props.contains(key))
                return "unknown argument \"" + key +
                       "\"; this tool takes: " + base::join(impl_->properties);
        }
    }
    for (const auto& key : impl_->required) {
        if (!args.contains(key))
            return "missing required argument \"" + key + "\" (" +
                   describe(props.value(key, json())) + ")";
    }
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(args);
    if (validator.validate(impl_->compiled_schema(), target, &results)) {
        auto bad = check_string_rules(impl_->string_rules, args, "");
        if (!bad) return {};
        const std::string top = bad->path.substr(0, bad->path.find_first_of(".["));
        return "invalid argument \"" + bad->path + "\": got " + quote_value(*bad->value) +
               ", expected " + describe(props.value(top, json()));
    }
    valijson::ValidationResults::Error error;
    std::string field;
    std::string detail;
    while (results.popError(error)) {
        // context is like {"<root>", "[limit]"}: the deepest named argument is the culprit.
        if (error.context.size() >= 2) {
            std::string name = error.context[1];
            if (name.size() >= 2 && name.front() == '[') name = name.substr(1, name.size() - 2);
            if (name.size() >= 2 && name.front() == '"') name = name.substr(1, name.size() - 2);
            field = name;
            detail = error.description;
            break;
        }
        if (detail.empty()) detail = error.description;
    }
    if (field.empty()) return "invalid arguments: " + detail;
    const json& value = args.contains(field) ? args[field] : json();
    return "invalid argument \"" + field + "\": got " + quote_value(value) + ", expected " +
           describe(props.value(field, json()));
}

}  // namespace agency::tools
