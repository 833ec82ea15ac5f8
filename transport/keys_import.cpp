#include "transport/keys_import.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace agency::mcp {

namespace {

using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
    throw std::runtime_error("keys import: " + where + ": " + what +
                             " (nothing was imported; fix it and run the import again)");
}

// Input quoted in a message: printable ASCII, at most 40 characters (the rest as '?').
std::string shown(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 40)) out += c >= 0x20 && c < 0x7f ? c : '?';
    return out;
}

std::string trimmed(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    return std::string(s.substr(b, s.find_last_not_of(" \t\r") - b + 1));
}

// A name goes into the keys file, `keys list` and the name,key lines: printable, one line.
void check_name(const std::string& name, const std::string& where) {
    if (name.empty()) refuse(where, "no name");
    if (name.size() > 128) refuse(where, "a name longer than 128 characters");
    for (const unsigned char c : name)
        if (c < 0x20 || c == 0x7f)
            refuse(where, "the name \"" + shown(name) + "\" holds a control character");
}

std::vector<std::string> list_of(std::string_view cell) {
    std::vector<std::string> out;
    std::string item;
    for (char c : cell) {
        if (c == ';' || c == ',' || c == ' ' || c == '\t') {
            if (!item.empty()) out.push_back(std::move(item));
            item.clear();
        } else {
            item += c;
        }
    }
    if (!item.empty()) out.push_back(std::move(item));
    return out;
}

std::int64_t actions_of(std::string_view cell, const std::string& where) {
    if (cell.empty() || cell.size() > 12 || cell.find_first_not_of("0123456789") != cell.npos)
        refuse(where, "monthly_actions must be a whole number, 0 or more, not \"" +
                          shown(cell) + "\"");
    return std::stoll(std::string(cell));
}

// One CSV record from `text` at `at` (RFC 4180: quoted cells, "" inside them); advances `at`
// past its line end and counts the lines it spans.
std::vector<std::string> csv_record(std::string_view text, std::size_t& at, std::size_t& line) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    const std::size_t first_line = line;
    for (; at < text.size(); ++at) {
        const char c = text[at];
        if (quoted) {
            if (c == '"' && at + 1 < text.size() && text[at + 1] == '"') {
                cells.back() += '"';
                ++at;
            } else if (c == '"') {
                quoted = false;
            } else {
                if (c == '\n') ++line;
                cells.back() += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            cells.emplace_back();
        } else if (c == '\n') {
            ++at;
            ++line;
            break;
        } else {
            cells.back() += c;
        }
        if (cells.back().size() > kMaxImportCell)
            refuse("line " + std::to_string(first_line), "a cell longer than 4096 characters");
        if (cells.size() > 16) refuse("line " + std::to_string(first_line), "more than 16 cells");
    }
    if (quoted) refuse("line " + std::to_string(first_line), "a quote is never closed");
    for (auto& cell : cells) cell = trimmed(cell);
    return cells;
}

std::vector<NewKey> from_csv(std::string_view text) {
    std::size_t at = 0, line = 1;
    std::vector<std::string> header;
    while (at < text.size() && header.empty()) {
        const std::size_t here = line;
        auto cells = csv_record(text, at, line);
        if (cells.size() == 1 && (cells[0].empty() || cells[0][0] == '#')) continue;
        for (const auto& name : cells)
            if (name != "name" && name != "scopes" && name != "clients" && name != "monthly_actions")
                refuse("line " + std::to_string(here),
                       "the header names a column \"" + shown(name) +
                           "\"; the columns are name, scopes, clients, monthly_actions");
        if (std::find(cells.begin(), cells.end(), "name") == cells.end())
            refuse("line " + std::to_string(here), "the header has no name column");
        header = std::move(cells);
    }
    std::vector<NewKey> out;
    while (at < text.size()) {
        const std::string where = "line " + std::to_string(line);
        const auto cells = csv_record(text, at, line);
        if (cells.size() == 1 && (cells[0].empty() || cells[0][0] == '#')) continue;
        if (cells.size() != header.size())
            refuse(where, std::to_string(cells.size()) + " cells where the header has " +
                              std::to_string(header.size()));
        NewKey key;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            if (header[i] == "name") key.name = cells[i];
            else if (header[i] == "scopes" && !cells[i].empty()) key.scopes = list_of(cells[i]);
            else if (header[i] == "clients") key.clients = list_of(cells[i]);
            else if (header[i] == "monthly_actions" && !cells[i].empty())
                key.monthly_actions = actions_of(cells[i], where);
        }
        check_name(key.name, where);
        out.push_back(std::move(key));
        if (out.size() > kMaxImportRows) refuse(where, "more than 10,000 keys");
    }
    return out;
}

std::vector<std::string> strings_of(const json& value, const std::string& where, const char* what) {
    if (value.is_string()) return list_of(value.get<std::string>());
    if (!value.is_array()) refuse(where, std::string(what) + " must be a list of strings");
    std::vector<std::string> out;
    for (const auto& item : value) {
        if (!item.is_string()) refuse(where, std::string(what) + " must be a list of strings");
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::vector<NewKey> from_json(std::string_view text) {
    // The shape is three levels deep: anything deeper is refused before parsing.
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    if (deepest > 4) refuse("the JSON", "nested deeper than a list of keys can be");
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) refuse("the JSON", "not valid JSON");
    const json* list = &doc;
    if (doc.is_object() && doc.contains("keys")) list = &doc["keys"];
    if (!list->is_array()) refuse("the JSON", "expected a list of keys, or {\"keys\": [...]}");
    if (list->size() > kMaxImportRows) refuse("the JSON", "more than 10,000 keys");
    std::vector<NewKey> out;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const std::string where = "entry " + std::to_string(i + 1);
        const json& entry = (*list)[i];
        if (!entry.is_object()) refuse(where, "not an object");
        NewKey key;
        for (const auto& [member, value] : entry.items()) {
            if (member == "name" && value.is_string()) key.name = trimmed(value.get<std::string>());
            else if (member == "scopes") key.scopes = strings_of(value, where, "scopes");
            else if (member == "clients") key.clients = strings_of(value, where, "clients");
            else if (member == "monthly_actions" && value.is_number_unsigned())
                key.monthly_actions = static_cast<std::int64_t>(
                    std::min<std::uint64_t>(value.get<std::uint64_t>(), 1'000'000'000'000));
            else if (member == "monthly_actions" && value.is_null()) key.monthly_actions.reset();
            else
                refuse(where, "\"" + shown(member) +
                                  "\" is not name (a string), scopes, clients or "
                                  "monthly_actions (a whole number, 0 or more)");
        }
        check_name(key.name, where);
        out.push_back(std::move(key));
    }
    return out;
}

}  // namespace

std::vector<NewKey> parse_key_rows(std::string_view text) {
    if (text.size() > kMaxImportBytes) refuse("the file", "larger than 1 MiB");
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a spreadsheet's BOM
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) refuse("the file", "it is empty");
    auto rows = text[first] == '[' || text[first] == '{' ? from_json(text) : from_csv(text);
    if (rows.empty()) refuse("the file", "it names no key (a header and no row)");
    std::set<std::string_view> names;
    for (const auto& row : rows)
        if (!names.insert(row.name).second)
            refuse("the file", "the name \"" + shown(row.name) +
                                   "\" appears twice (each key needs a name of its own)");
    return rows;
}

}  // namespace agency::mcp
