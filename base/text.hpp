// Small text helpers that several layers need, written once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agency::base {

// ASCII lower case (HTTP header names, URL schemes, hosts): locale-independent.
std::string ascii_lower(std::string_view text);
// ASCII case-insensitive equality (keywords, severities).
bool iequals(std::string_view a, std::string_view b);
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// Without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

// Whether `cp` would act on a terminal or reorder what it shows rather than be read: a C0 or C1
// control, DEL, a bidi control (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069), or a line or
// paragraph separator (U+2028, U+2029: some readers break lines there).
bool terminal_control(char32_t cp);
// JSON text (as nlohmann's dump writes it) with every terminal_control character that is still
// literal written as a \uXXXX escape (C1, DEL and bidi: JSON escapes only C0 itself) and a
// byte that is not UTF-8 as \ufffd. The same JSON value, safe to print.
std::string terminal_safe_json(std::string_view json_text);
// Plain text made visible: a backslash doubled, a terminal_control character as \uXXXX and a
// byte that is not UTF-8 as \xNN, so that nothing acts on a terminal and the escapes are
// unambiguous.
std::string terminal_safe_text(std::string_view text);
// One CSV cell: always quoted, quotes doubled; a leading = + - @ tab or CR (a formula to a
// spreadsheet) neutralised with a leading '. Make `text` terminal-safe first where it may hold
// control characters.
std::string csv_cell(std::string_view text);
// A log message made one line that nothing in it can end or fake: \n, \r and \t as those
// escapes, any other terminal_control character as \uXXXX and a byte that is not UTF-8 as
// \xNN (backslashes stay single, so JSON in a message reads as it was). The text sink writes
// every message through it, so no line can begin with text a gateway or a caller planted.
std::string log_safe_text(std::string_view text);
// Whether log_safe_text would leave `text` as it is (no allocation for the usual line).
bool log_safe(std::string_view text);

}  // namespace agency::base
