// One gateway row cut to a byte budget: what `max_bytes` does to a row bigger than the whole
// answer may hold (issue 30). The row's members are kept in order while they fit; a string
// that does not is shortened (its text ends with "…"), any other member that does not is left
// out. Nothing is held per member: a row of a million members costs one pass over its text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agency::gateway {

struct RowCut {
    static constexpr std::size_t kNamed = 3;  // names kept per list, for the answer's note
    std::vector<std::string> shortened;       // the first kNamed shortened members' names
    std::vector<std::string> dropped;         // the first kNamed left-out members' names
    std::size_t shortened_count = 0;
    std::size_t dropped_count = 0;
    bool unreadable = false;  // the row's text is not a valid object past some point: the rest
                              // is left out
    bool cut() const { return shortened_count + dropped_count != 0 || unreadable; }
};

// Writes `row` (a JSON object's text) into `out` in at most max(room, 2) bytes, cut as above.
RowCut cut_row(std::string_view row, std::size_t room, std::string& out);

// `text` shortened to at most `max` bytes without splitting a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view text, std::size_t max);

}  // namespace agency::gateway
