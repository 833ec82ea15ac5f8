// What a person is shown before confirming: an article's or an e-mail's HTML as plain text,
// cut to a length a confirmation form can hold.
#include <cctype>
#include <string>
#include <string_view>
#include <utility>

#include "base/untrusted_text.hpp"
#include "tools/actions/action_internal.hpp"

namespace agency::tools {

namespace {

// The HTML entities article and e-mail bodies use; others stay as written.
std::string_view entity_text(std::string_view name) {
    static constexpr std::pair<std::string_view, std::string_view> kEntities[] = {
        {"amp", "&"},        {"lt", "<"},          {"gt", ">"},         {"quot", "\""},
        {"#39", "'"},        {"apos", "'"},        {"nbsp", " "},       {"mdash", "\u2014"},
        {"ndash", "\u2013"}, {"hellip", "\u2026"}, {"rsquo", "\u2019"}, {"lsquo", "\u2018"},
        {"rdquo", "\u201d"}, {"ldquo", "\u201c"}};
    for (const auto& [entity, text] : kEntities)
        if (entity == name) return text;
    return {};
}

bool breaks_line(std::string_view tag) {
    static constexpr std::string_view kBlocks[] = {
        "p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "blockquote"};
    for (std::string_view block : kBlocks)
        if (tag == block) return true;
    return false;
}

// Text out, blanks folded (one space between words, one newline between blocks), at most
// `max_chars` characters (UTF-8: a character is cut whole or not at all).
class Folder {
public:
    explicit Folder(std::size_t max_chars) : max_chars_(max_chars) {}
    void blank(bool line) {
        if (line || pending_ == 0) pending_ = line ? '\n' : ' ';
    }
    // false when a character did not fit.
    bool put(std::string_view text) {
        for (char c : text) {
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                blank(false);
                continue;
            }
            if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {  // a character starts
                const bool sep = pending_ != 0 && !out_.empty();
                if (chars_ + (sep ? 2 : 1) > max_chars_) return false;
                if (sep) {
                    out_ += pending_;
                    ++chars_;
                }
                pending_ = 0;
                ++chars_;
            }
            out_ += c;
        }
        return true;
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
    std::size_t max_chars_;
    std::size_t chars_ = 0;
    char pending_ = 0;
};

}  // namespace

std::string plain_text(std::string_view html, std::size_t max_chars, bool* cut) {
    constexpr std::size_t kMaxInput = 256 * 1024;  // a preview never needs more
    const bool longer = html.size() > kMaxInput;
    // What the person would not see in a browser is not shown either: hidden HTML and
    // invisible characters go before the text is read.
    const std::string visible = base::clean_untrusted_text(html.substr(0, kMaxInput));
    html = visible;
    bool more = false;
    Folder out(max_chars);
    std::size_t i = 0;
    while (i < html.size() && !more) {
        const char c = html[i];
        if (c == '<') {
            const std::size_t end = html.find('>', i);
            if (end == std::string_view::npos) break;  // a cut tag: nothing readable follows
            std::string_view tag = html.substr(i + 1, end - i - 1);
            const bool closing = !tag.empty() && tag[0] == '/';
            if (closing) tag.remove_prefix(1);
            std::string name;
            for (char t : tag.substr(0, 16)) {
                if (!std::isalnum(static_cast<unsigned char>(t))) break;
                name += static_cast<char>(std::tolower(static_cast<unsigned char>(t)));
            }
            i = end + 1;
            if (!closing && (name == "script" || name == "style")) {  // no text a person reads
                const std::size_t close = html.find("</" + name, i);
                i = close == std::string_view::npos ? html.size() : close;
                continue;
            }
            out.blank(breaks_line(name));
            continue;
        }
        std::string_view piece = html.substr(i, 1);
        std::size_t step = 1;
        if (c == '&') {
            // Only a short run is an entity: a search to the end for every '&' would be
            // quadratic on a body of ampersands.
            const std::size_t semi = html.substr(0, i + 10).find(';', i);
            if (semi != std::string_view::npos && semi - i <= 8) {
                const std::string_view decoded = entity_text(html.substr(i + 1, semi - i - 1));
                if (!decoded.empty()) {
                    piece = decoded;
                    step = semi + 1 - i;
                }
            }
        }
        if (!out.put(piece)) more = true;
        i += step;
    }
    if (cut) *cut = more || longer;
    return out.take();
}

json first_text(const json& data, std::initializer_list<const char*> fields) {
    if (!data.is_object()) return nullptr;
    for (const char* f : fields)
        if (auto it = data.find(f);
            it != data.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
            return *it;
    return nullptr;
}

json shown_text(const json& text) {
    if (!text.is_string()) return text;
    return base::clean_untrusted_text(text.get_ref<const std::string&>());
}

json article_excerpt(const json& article) {
    constexpr std::size_t kExcerptChars = 300;
    const json body = first_text(article, {"post_content", "content", "content_html", "html",
                                           "body", "body_html", "excerpt", "summary"});
    if (body.is_null()) return nullptr;
    bool cut = false;
    std::string text = plain_text(body.get_ref<const std::string&>(), kExcerptChars, &cut);
    if (text.empty()) return nullptr;
    if (cut) text += "\u2026";
    return text;
}

}  // namespace agency::tools
