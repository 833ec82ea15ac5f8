// What an article's or e-mail's HTML holds besides its text (tools/actions/html_inventory.hpp): one
// linear scan of the HTML a browser would show (hidden parts removed by the untrusted-text
// cleaner first), with bounded lists and every text cleaned and cut.
#include "tools/actions/html_inventory.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>
#include <vector>

#include "base/untrusted_text.hpp"
#include "tools/actions/action_internal.hpp"

namespace agency::tools {

// Named, not anonymous: a unity batch shares one anonymous namespace among tools/ files.
namespace inventory_scan {

constexpr std::size_t npos = std::string::npos;
constexpr std::size_t kMaxInput = 256 * 1024;  // as plain_text: a preview never needs more
constexpr std::size_t kMaxTextChars = 80;      // a link's, a button's or a field's text
constexpr std::size_t kTextWindow = 4096;      // how far an element's text is read
constexpr std::size_t kMaxReadElements = 200;  // elements whose text is read; later ones counted
constexpr std::size_t kMaxImagesSeen = 1000;   // distinct image URLs remembered

bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// The '>' that ends the tag opened at `at` (quotes respected), npos when none.
std::size_t tag_end(std::string_view text, std::size_t at) {
    char quote = 0;
    for (std::size_t i = at + 1; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
            if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
            if (i > 0 && (text[i - 1] == '=' || blank(text[i - 1]))) quote = c;
        } else if (c == '>') {
            return i;
        }
    }
    return npos;
}

// A frame's content is never rendered (the cleaner removes the element whole), but what it
// loads is seen: each <iframe ...>...</iframe> becomes <agency-frame ...></agency-frame>, which
// the cleaner keeps when visible and removes inside a hidden element like any other.
std::string unwrap_frames(std::string_view html) {
    const std::string low = lower_ascii(html);
    std::string out;
    std::size_t i = 0;
    for (std::size_t at; (at = low.find("<iframe", i)) != npos;) {
        const char next = at + 7 < low.size() ? low[at + 7] : '>';
        const std::size_t gt = tag_end(low, at);
        if (!(blank(next) || next == '>' || next == '/') || gt == npos) {
            out.append(html.substr(i, at + 7 - i));
            i = at + 7;
            continue;
        }
        const std::size_t close = low.find("</iframe", gt);
        const std::size_t close_gt = close == npos ? npos : low.find('>', close);
        out.append(html.substr(i, at - i));
        out += "<agency-frame";
        out.append(html.substr(at + 7, gt - at - 7));
        out += "></agency-frame>";
        i = close_gt == npos ? html.size() : close_gt + 1;
    }
    out.append(html.substr(std::min(i, html.size())));
    return out;
}

// Attributes of a start tag (names lower case, values as written), from after its name.
using Attrs = std::vector<std::pair<std::string, std::string>>;

Attrs read_attrs(std::string_view s) {
    Attrs out;
    std::size_t j = 0;
    while (j < s.size() && out.size() < 64) {
        while (j < s.size() && (blank(s[j]) || s[j] == '/')) ++j;
        const std::size_t name_at = j;
        while (j < s.size() && !blank(s[j]) && s[j] != '=' && s[j] != '/') ++j;
        if (j == name_at) break;
        std::string name = lower_ascii(s.substr(name_at, j - name_at));
        while (j < s.size() && blank(s[j])) ++j;
        std::string value;
        if (j < s.size() && s[j] == '=') {
            ++j;
            while (j < s.size() && blank(s[j])) ++j;
            const char quote = j < s.size() && (s[j] == '"' || s[j] == '\'') ? s[j] : 0;
            if (quote) ++j;
            const std::size_t value_at = j;
            while (j < s.size() && (quote ? s[j] != quote : !blank(s[j]))) ++j;
            value = s.substr(value_at, j - value_at);
            if (quote && j < s.size()) ++j;
        }
        out.emplace_back(std::move(name), std::move(value));
    }
    return out;
}

const std::string* attr(const Attrs& attrs, std::string_view name) {
    for (const auto& [n, v] : attrs)
        if (n == name) return &v;
    return nullptr;
}

// Gateway text as listed: entities decoded, cleaned (plain_text), cut with an ellipsis.
std::string listed_text(std::string_view raw, std::size_t max_chars) {
    bool cut = false;
    std::string text = plain_text(raw, max_chars, &cut);
    if (cut) text += "\u2026";
    return text;
}

std::string attr_text(const Attrs& attrs, std::string_view name, std::size_t max_chars) {
    const std::string* v = attr(attrs, name);
    return v ? listed_text(*v, max_chars) : std::string();
}

std::string in_quotes(const std::string& text) { return text.empty() ? text : " \"" + text + "\""; }

// An address as text or link target: host (lower case, no "www.", no port or user) and path
// (no trailing '/'); `ok` when the text reads as an address (a scheme, or a dotted host).
struct Address {
    std::string host, path;
    bool ok = false;
};

Address address_of(std::string_view raw) {
    Address a;
    std::string s = lower_ascii(raw);
    while (!s.empty() && blank(s.back())) s.pop_back();
    s.erase(0, std::min(s.size(), s.find_first_not_of(" \t\r\n")));
    bool scheme = false;
    for (std::string_view p : {"https://", "http://", "//", "mailto:"})
        if (s.starts_with(p)) {
            s.erase(0, p.size());
            scheme = true;
            break;
        }
    if (s.empty() || s.find_first_of(" \t\r\n") != npos) return a;
    const std::size_t end = std::min(s.find_first_of("/?#"), s.size());
    a.host = s.substr(0, end);
    a.path = s.substr(end);
    if (const std::size_t at = a.host.rfind('@'); at != npos) a.host.erase(0, at + 1);
    if (const std::size_t colon = a.host.find(':'); colon != npos) a.host.resize(colon);
    if (a.host.starts_with("www.")) a.host.erase(0, 4);
    while (!a.path.empty() && a.path.back() == '/') a.path.pop_back();
    const std::size_t dot = a.host.rfind('.');
    const bool dotted =
        dot != npos && dot > 0 && a.host.size() - dot > 2 &&
        std::all_of(a.host.begin() + static_cast<std::ptrdiff_t>(dot) + 1, a.host.end(),
                    [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    a.ok = scheme ? !a.host.empty() : dotted;
    return a;
}

bool remote_url(std::string_view url) {
    const std::string low = lower_ascii(url.substr(0, 8));
    return low.starts_with("http://") || low.starts_with("https://") || low.starts_with("//");
}

class Scan {
public:
    explicit Scan(std::string html) : html_(std::move(html)), low_(lower_ascii(html_)) {}
    HtmlInventory run();

private:
    std::size_t element(const std::string& name, const Attrs& attrs, std::size_t at);
    std::size_t close_of(const std::string& name, std::size_t at, std::size_t window) const;
    std::string text_in(const std::string& name, std::size_t at);
    std::size_t skip(const std::string& name, std::size_t at) const;
    void item(const std::string& kind, std::string description);
    void image(std::string_view raw);
    void images_of(const Attrs& attrs);
    void link(const Attrs& attrs, std::size_t at);
    void input(const Attrs& attrs);

    std::string html_, low_;
    std::size_t read_ = 0;  // elements whose text was read
    HtmlInventory out_;
    std::vector<json> misleading_, plain_;  // links, each kind at most kMaxListed
    std::set<std::string> images_;
};

// The end of the element `name` whose content starts at `at`: its closing tag's '<', or
// `at + window` (the text's end) when none is found that near.
std::size_t Scan::close_of(const std::string& name, std::size_t at, std::size_t window) const {
    const std::size_t limit = std::min(low_.size(), window == npos ? low_.size() : at + window);
    const std::string tag = "</" + name;
    for (std::size_t close = low_.find(tag, at); close != npos && close <= limit;
         close = low_.find(tag, close + 1)) {
        const std::size_t after = close + tag.size();
        if (after >= low_.size() || !std::isalnum(static_cast<unsigned char>(low_[after])))
            return close;
    }
    return limit;
}

std::string Scan::text_in(const std::string& name, std::size_t at) {
    if (++read_ > kMaxReadElements) return {};
    const std::size_t end = close_of(name, at, kTextWindow);
    return listed_text(std::string_view(html_).substr(at, end - at), kMaxTextChars);
}

// Where the scan goes on after an element whose content it does not read (svg, select, ...).
std::size_t Scan::skip(const std::string& name, std::size_t at) const {
    if (read_ > kMaxReadElements) return at;
    return close_of(name, at, npos);
}

void Scan::item(const std::string& kind, std::string description) {
    out_.counts[kind] = out_.counts.value(kind, 0) + 1;
    if (out_.interactive.size() >= HtmlInventory::kMaxListed) {
        ++out_.unlisted;
        return;
    }
    out_.interactive.push_back({{"kind", kind}, {"description", std::move(description)}});
}

void Scan::image(std::string_view raw) {
    std::string url = listed_text(raw, HtmlInventory::kMaxUrlChars);
    if (!remote_url(url) || images_.size() >= kMaxImagesSeen || !images_.insert(url).second) return;
    out_.counts["remote_image"] = out_.counts.value("remote_image", 0) + 1;
    if (out_.remote_images.size() >= HtmlInventory::kMaxListed) {
        ++out_.unlisted;
        return;
    }
    out_.remote_images.push_back(std::move(url));
}

// Images a reader's client loads: src, each srcset candidate, poster, background, CSS url().
void Scan::images_of(const Attrs& attrs) {
    for (const auto& [name, value] : attrs) {
        if (name == "poster" || name == "background") image(value);
        if (name == "srcset")
            for (std::size_t i = 0; i < value.size();) {
                std::size_t comma = value.find(',', i);
                if (comma == npos) comma = value.size();
                std::string_view part = std::string_view(value).substr(i, comma - i);
                while (!part.empty() && blank(part.front())) part.remove_prefix(1);
                image(part.substr(0, part.find_first_of(" \t\r\n")));
                i = comma + 1;
            }
        if (name != "style") continue;
        const std::string low = lower_ascii(value);
        for (std::size_t u = low.find("url("); u != npos; u = low.find("url(", u + 4)) {
            std::string_view rest = std::string_view(value).substr(u + 4);
            rest = rest.substr(0, rest.find(')'));
            while (!rest.empty() &&
                   (blank(rest.front()) || rest.front() == '"' || rest.front() == '\''))
                rest.remove_prefix(1);
            while (!rest.empty() &&
                   (blank(rest.back()) || rest.back() == '"' || rest.back() == '\''))
                rest.remove_suffix(1);
            image(rest);
        }
    }
}

void Scan::link(const Attrs& attrs, std::size_t at) {
    const std::string* raw = attr(attrs, "href");
    if (!raw) return;
    const std::string href = listed_text(*raw, HtmlInventory::kMaxUrlChars);
    if (href.empty() || href.starts_with("#")) return;  // the same page
    const std::string text = text_in("a", at);
    const Address target = address_of(href), said = address_of(text);
    const std::string t = lower_ascii(text), h = lower_ascii(href);
    if (t == h || t + "/" == h ||
        (said.ok && target.ok && said.host == target.host && target.path.starts_with(said.path)))
        return;
    out_.counts["link"] = out_.counts.value("link", 0) + 1;
    std::vector<json>& kept = said.ok ? misleading_ : plain_;
    if (kept.size() < HtmlInventory::kMaxListed)
        kept.push_back({{"text", text}, {"href", href}, {"misleading", said.ok}});
    else
        ++out_.unlisted;
}

void Scan::input(const Attrs& attrs) {
    std::string type = lower_ascii(attr_text(attrs, "type", 20));
    std::string label = attr_text(attrs, "aria-label", kMaxTextChars);
    for (const char* name : {"placeholder", "title", "value", "name"})
        if (label.empty() && !(type == "password" && std::string_view(name) == "value"))
            label = attr_text(attrs, name, kMaxTextChars);
    std::string what;
    if (type == "password") {
        out_.counts["password_field"] = out_.counts.value("password_field", 0) + 1;
        what = "a password field";
    } else if (type == "submit" || type == "button" || type == "reset") {
        what = "a button";
    } else if (type == "image") {
        what = "an image button";
        if (const std::string* src = attr(attrs, "src")) image(*src);
    } else if (type == "checkbox" || type == "radio") {
        what = type == "radio" ? "a radio button" : "a checkbox";
    } else if (type == "file") {
        what = "a file upload field";
    } else {
        what = "a " + (type.empty() ? std::string("text") : type) + " field";
    }
    item("input", what + in_quotes(label));
}

// Takes in one start tag; where the scan goes on.
std::size_t Scan::element(const std::string& name, const Attrs& attrs, std::size_t at) {
    images_of(attrs);
    const std::string label = attr_text(attrs, "aria-label", kMaxTextChars);
    if (name == "a") {
        link(attrs, at);
    } else if (name == "img" || name == "source") {
        if (const std::string* src = attr(attrs, "src"); src && name == "img") image(*src);
    } else if (name == "form") {
        const std::string action = attr_text(attrs, "action", HtmlInventory::kMaxUrlChars);
        item("form", action.empty() ? "a form" : "a form sending to " + action);
    } else if (name == "input") {
        input(attrs);
    } else if (name == "button") {
        std::string text = text_in("button", at);
        item("button", "a button" + in_quotes(text.empty() ? label : text));
    } else if (name == "select") {
        const std::string named = label.empty() ? attr_text(attrs, "name", kMaxTextChars) : label;
        item("select", "a drop-down list" + in_quotes(named));
        return skip(name, at);
    } else if (name == "textarea") {
        std::string named = label.empty() ? attr_text(attrs, "placeholder", kMaxTextChars) : label;
        item("textarea", "a text box" + in_quotes(named.empty() ? text_in(name, at) : named));
        return skip(name, at);
    } else if (name == "svg" || name == "math") {
        const std::string text = text_in(name, at);
        item(name, name == "svg" ? (text.empty() ? "an SVG drawing" : "SVG text" + in_quotes(text))
                                 : "a formula" + in_quotes(text));
        return skip(name, at);
    } else if (name == "agency-frame" || name == "frame") {
        const std::string src = attr_text(attrs, "src", HtmlInventory::kMaxUrlChars);
        item("iframe", src.empty() ? "an embedded frame" : "an embedded frame showing " + src);
    } else if (name == "embed" || name == "object" || name == "applet") {
        const std::string src =
            attr_text(attrs, name == "object" ? "data" : "src", HtmlInventory::kMaxUrlChars);
        item(name == "applet" ? "object" : name,
             src.empty() ? "embedded content" : "embedded content from " + src);
    } else if (name == "video" || name == "audio") {
        const std::string src = attr_text(attrs, "src", HtmlInventory::kMaxUrlChars);
        item(name, "a" + std::string(name == "audio" ? "n audio" : " video") +
                       (src.empty() ? std::string() : " from " + src));
    } else if (name == "canvas") {
        item("canvas", "a drawing area (canvas)");
    }
    return at;
}

HtmlInventory Scan::run() {
    for (std::size_t i = 0; (i = low_.find('<', i)) != npos;) {
        const std::size_t gt = tag_end(low_, i);
        if (gt == npos) break;
        std::size_t k = i + 1;
        const char first = low_[k];  // k <= gt < size
        if (!std::isalpha(static_cast<unsigned char>(first))) {
            i = first == '/' || first == '!' || first == '?' ? gt + 1 : i + 1;
            continue;
        }
        while (k < gt && !blank(low_[k]) && low_[k] != '/') ++k;
        const std::string name = low_.substr(i + 1, k - i - 1);
        i = std::max(gt + 1,
                     element(name, read_attrs(std::string_view(html_).substr(k, gt - k)), gt + 1));
    }
    // Links whose text reads as another address first: those are what a person must see.
    for (std::vector<json>* kept : {&misleading_, &plain_})
        for (json& l : *kept) {
            if (out_.links.size() < HtmlInventory::kMaxListed)
                out_.links.push_back(std::move(l));
            else
                ++out_.unlisted;
        }
    return std::move(out_);
}

std::string more(const HtmlInventory& inv, const char* kind, std::size_t listed) {
    const std::size_t all = inv.counts.value(kind, std::size_t{0});
    return all > listed ? " and " + std::to_string(all - listed) + " more" : std::string();
}

}  // namespace inventory_scan

using inventory_scan::more;

HtmlInventory html_inventory(std::string_view html) {
    // As a browser shows it: hidden parts go first, frames kept (unwrap_frames).
    return inventory_scan::Scan(base::clean_untrusted_text(inventory_scan::unwrap_frames(
                                    html.substr(0, inventory_scan::kMaxInput))))
        .run();
}

std::string inventory_note(const HtmlInventory& inv, std::string_view what) {
    std::string out;
    if (!inv.interactive.empty()) {
        out += "\n[The " + std::string(what) + " also holds what a text preview cannot show: ";
        std::size_t n = 0;
        for (const json& item : inv.interactive)
            out += (n++ ? "; " : "") + item.value("description", "");
        // What the limits left out, less the links and images left out.
        const auto left_out = [&inv](const char* kind, std::size_t listed) {
            return inv.counts.value(kind, std::size_t{0}) - listed;
        };
        const std::size_t others =
            left_out("link", inv.links.size()) + left_out("remote_image", inv.remote_images.size());
        if (inv.unlisted > others)
            out += "; and " + std::to_string(inv.unlisted - others) + " more";
        out += ".]";
    }
    if (!inv.links.empty()) {
        out += "\n[Links whose text is not where they go: ";
        std::size_t n = 0;
        for (const json& l : inv.links) {
            const std::string text = l.value("text", "");
            out += (n++ ? "; " : "") +
                   (text.empty() ? std::string("a link without text") : "\"" + text + "\"") +
                   " goes to " + l.value("href", "") +
                   (l.value("misleading", false) ? " (its text names another address)" : "");
        }
        out += more(inv, "link", inv.links.size()) + ".]";
    }
    if (!inv.remote_images.empty()) {
        const std::size_t n = inv.counts.value("remote_image", std::size_t{0});
        out += "\n[" + std::to_string(n) + (n == 1 ? " image" : " images") +
               " loaded from elsewhere when it is read: ";
        std::size_t k = 0;
        for (const json& url : inv.remote_images) out += (k++ ? ", " : "") + url.get<std::string>();
        out += more(inv, "remote_image", inv.remote_images.size()) + ".]";
    }
    return out;
}

void add_inventory(json& details, const HtmlInventory& inv) {
    details["links"] = inv.links;
    details["remote_images"] = inv.remote_images;
    details["interactive"] = inv.interactive;
    details["content_counts"] = inv.counts;
    details["contents_unlisted"] = inv.unlisted;
}

}  // namespace agency::tools
