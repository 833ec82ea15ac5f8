// RowWriter: a list answer spliced from the gateway's rows, inside its size budget, and the
// single records cut to theirs (tools/kit/tool_kit.hpp).
#include <string>
#include <vector>

#include "base/answer_form.hpp"
#include "base/untrusted_text.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// --- rows ------------------------------------------------------------------------------------

// What closes an answer (returned, total, truncated, a next_cursor of ~300 bytes, a note) is
// kept inside the budget too, so a 24,000-byte budget is a 24,000-byte answer.
RowWriter::RowWriter(std::string_view client_id, std::string_view resource, std::size_t budget)
    : budget_(budget > 4096 ? budget - 768 : budget * 3 / 4),
      lean_(base::AnswerForms::current() == base::AnswerForm::lean) {
    out_.reserve(std::min<std::size_t>(budget, 64 * 1024) + 256);
    out_ += R"({"client_id":)";
    mcp::append_json_string(out_, client_id);
    out_ += R"(,"resource":)";
    mcp::append_json_string(out_, resource);
    out_ += R"(,"rows":[)";
    lean_used_ = out_.size() + std::string_view(R"("columns":[],)").size();
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

// A lean answer's row is an array of the values: the row's bytes less its keys, a null for each
// column it lacks, and for each column it adds, its name once and a null in every row before.
// Counted exactly however many columns the rows bring (server/lean_answer.hpp keeps them all),
// so the nulls a sparse page adds are within the budget too.
std::size_t RowWriter::cost_of(std::string_view row) {
    new_columns_.clear();
    if (!lean_) return row.size();
    std::size_t key_bytes = 0, members = 0, added = 0;
    int depth = 0;
    std::size_t string_at = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < row.size(); ++i) {
        const char ch = row[i];
        if (in_string) {
            if (ch == '\\') {
                ++i;
            } else if (ch == '"') {
                in_string = false;
                if (depth != 1 || i + 1 >= row.size() || row[i + 1] != ':') continue;
                const std::string_view key = row.substr(string_at, i + 1 - string_at);
                key_bytes += key.size() + 1;
                ++members;
                if (columns_.contains(key)) continue;
                new_columns_.emplace_back(key);
                added += key.size() + 1 + 5 * count_;
            }
        } else if (ch == '"') {
            in_string = true;
            string_at = i;
        } else if (ch == '{' || ch == '[') {
            ++depth;
        } else if (ch == '}' || ch == ']') {
            --depth;
        }
    }
    const std::size_t known = columns_.size() + new_columns_.size();
    const std::size_t lacking = known > members ? known - members : 0;
    return (row.size() > key_bytes ? row.size() - key_bytes : 0) + 5 * lacking + added;
}

bool RowWriter::add(std::string_view row, std::size_t members_left_out) {
    using namespace row_writer_detail;
    row = cleaner_.clean(row);
    const std::size_t cost = cost_of(row);
    const std::size_t used = lean_ ? lean_used_ : out_.size();
    if (count_ > 0 && used + cost + 1 > budget_) {
        truncated_ = true;
        return false;
    }
    if (count_ > 0) out_.push_back(',');
    if (count_ == 0 && used + cost > budget_) {
        // max_bytes holds for a single row too: it goes in cut to the room there is.
        const std::size_t used_full = out_.size() + kCutNoteRoom;
        const gateway::RowCut cut =
            gateway::cut_row(row, budget_ > used_full ? budget_ - used_full : 2, cut_scratch_);
        out_.append(cut_scratch_);
        truncated_ = true;
        note_cut(cut, members_left_out);
        lean_used_ = out_.size();  // a cut row is weighed in full
    } else {
        out_.append(row);
        lean_used_ += cost + (count_ > 0 ? 1 : 0);
        if (members_left_out != 0) {
            truncated_ = true;
            note_cut({}, members_left_out);
        }
    }
    for (auto& name : new_columns_) columns_.insert(std::move(name));
    new_columns_.clear();
    ++count_;
    return true;
}

std::string bounded_record(std::string record, std::size_t budget) {
    using namespace row_writer_detail;
    if (record.size() <= budget) return record;
    std::string out;
    const gateway::RowCut cut =
        gateway::cut_row(record, budget > kCutNoteRoom ? budget - kCutNoteRoom : 2, out);
    std::string note =
        "this record was cut to fit the answer's size budget (" + count_text(budget) + " bytes):";
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
    std::string text = "row " + std::to_string(count_ + 1) +
                       " was cut to fit the answer's size "
                       "budget (max_bytes):";
    if (cut.shortened_count != 0)
        text += " " + count_text(cut.shortened_count) +
                " string(s) shortened, each ending in \"\xE2\x80\xA6\" (" +
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
