// RowWriter: a list answer spliced from the gateway's rows, inside its size budget, and the
// single records cut to theirs (tools/tool_kit.hpp).
#include <string>
#include <vector>

#include "base/untrusted_text.hpp"
#include "tools/tool_kit.hpp"

namespace agency::tools {

// --- rows ------------------------------------------------------------------------------------

// What closes an answer (returned, total, truncated, a next_cursor of ~300 bytes, a note) is
// kept inside the budget too, so a 24,000-byte budget is a 24,000-byte answer.
RowWriter::RowWriter(std::string_view client_id, std::string_view resource, std::size_t budget)
    : budget_(budget > 4096 ? budget - 768 : budget * 3 / 4) {
    out_.reserve(std::min<std::size_t>(budget, 64 * 1024) + 256);
    out_ += R"({"client_id":)";
    mcp::append_json_string(out_, client_id);
    out_ += R"(,"resource":)";
    mcp::append_json_string(out_, resource);
    out_ += R"(,"rows":[)";
}

namespace row_writer_detail {

// Room kept for the sentence that says what was cut (kept short: names are clipped).
constexpr std::size_t kCutNoteRoom = 400;

std::string count_text(std::size_t n) {
    std::string digits = std::to_string(n);
    for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
        digits.insert(static_cast<std::size_t>(at), ",");
    return digits;
}

std::string names_text(const std::vector<std::string>& names, std::size_t count) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    if (count > names.size()) out += ", ...";
    return out;
}

}  // namespace row_writer_detail

bool RowWriter::add(std::string_view row, std::size_t members_left_out) {
    using namespace row_writer_detail;
    row = cleaner_.clean(row);
    if (count_ > 0 && out_.size() + row.size() + 1 > budget_) {
        truncated_ = true;
        return false;
    }
    if (count_ > 0) out_.push_back(',');
    if (count_ == 0 && out_.size() + row.size() > budget_) {
        // max_bytes holds for a single row too: it goes in cut to the room there is.
        const std::size_t used = out_.size() + kCutNoteRoom;
        const gateway::RowCut cut =
            gateway::cut_row(row, budget_ > used ? budget_ - used : 2, cut_scratch_);
        out_.append(cut_scratch_);
        truncated_ = true;
        note_cut(cut, members_left_out);
    } else {
        out_.append(row);
        if (members_left_out != 0) {
            truncated_ = true;
            note_cut({}, members_left_out);
        }
    }
    ++count_;
    return true;
}

std::string bounded_record(std::string record, std::size_t budget) {
    using namespace row_writer_detail;
    if (record.size() <= budget) return record;
    std::string out;
    const gateway::RowCut cut =
        gateway::cut_row(record, budget > kCutNoteRoom ? budget - kCutNoteRoom : 2, out);
    std::string note = "this record was cut to fit the answer's size budget (" +
                       count_text(budget) + " bytes):";
    if (cut.shortened_count != 0)
        note += " " + count_text(cut.shortened_count) + " string(s) shortened (" +
                names_text(cut.shortened, cut.shortened_count) + ");";
    if (cut.dropped_count != 0)
        note += " " + count_text(cut.dropped_count) + " member(s) left out (" +
                names_text(cut.dropped, cut.dropped_count) + ");";
    if (cut.unreadable) note += " the rest was not valid JSON;";
    note.back() = '.';
    out.pop_back();  // the closing brace
    out += out.size() > 1 ? R"(,"truncated":true,"note":)" : R"("truncated":true,"note":)";
    mcp::append_json_string(out, base::clean_untrusted_text(note));
    out.push_back('}');
    return out;
}

// One sentence for the first row cut; later ones are counted.
void RowWriter::note_cut(const gateway::RowCut& cut, std::size_t members_left_out) {
    using namespace row_writer_detail;
    if (cut_rows_++ != 0) return;
    std::string text = "row " + std::to_string(count_ + 1) + " was cut to fit the answer's size "
                       "budget (max_bytes):";
    if (cut.shortened_count != 0)
        text += " " + count_text(cut.shortened_count) + " string(s) shortened, each ending in \"\xE2\x80\xA6\" (" +
                names_text(cut.shortened, cut.shortened_count) + ");";
    const std::size_t dropped = cut.dropped_count + members_left_out;
    if (dropped != 0)
        text += " " + count_text(dropped) + " member(s) left out (" +
                names_text(cut.dropped, dropped) + ");";
    if (cut.unreadable) text += " the rest of the row was not valid JSON;";
    if (members_left_out != 0 && !cut.cut())
        text = "row " + std::to_string(count_ + 1) + " was cut: it has more members than an " +
               "answer's row keeps (" + count_text(gateway::kMaxSelectedMembers) + "); " +
               count_text(members_left_out) + " left out;";
    text.back() = '.';
    cut_note_ = std::move(text);
}

std::string RowWriter::finish(std::optional<std::int64_t> total, const std::string& next_cursor,
                              std::string_view extra_members) {
    using namespace row_writer_detail;
    out_ += R"(],"returned":)";
    out_ += std::to_string(count_);
    if (total) {
        out_ += R"(,"total":)";
        out_ += std::to_string(*total);
    }
    out_ += truncated_ ? R"(,"truncated":true)" : R"(,"truncated":false)";
    if (!next_cursor.empty()) {
        out_ += R"(,"next_cursor":)";
        mcp::append_json_string(out_, next_cursor);
    }
    if (cut_rows_ > 1)
        cut_note_ += " " + count_text(cut_rows_ - 1) + " other row(s) were cut alike.";
    if (!note_.empty() || !cut_note_.empty()) {
        out_ += R"(,"note":)";
        std::string note = base::clean_untrusted_text(note_);
        if (!cut_note_.empty())
            note += (note.empty() ? "" : " ") + base::clean_untrusted_text(cut_note_);
        mcp::append_json_string(out_, note);
    }
    if (!extra_members.empty()) {
        out_.push_back(',');
        out_.append(cleaner_.clean(extra_members));
    }
    out_.push_back('}');
    return std::move(out_);
}

}  // namespace agency::tools
