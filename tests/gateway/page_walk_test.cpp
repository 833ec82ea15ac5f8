// The gateway page walker (gateway/page_walk.hpp): rows, fields, pagination, the must_contain
// rejection and every kind of malformed page, without a network.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gateway/page_walk.hpp"

namespace {

using agency::gateway::Row;
using agency::gateway::WalkOptions;
using agency::gateway::WalkProblem;
using agency::gateway::WalkResult;
using agency::gateway::walk_rows;

struct Seen {
    std::string json;
    std::string keyword;  // fields[0] unescaped
    std::size_t index;
};

WalkResult walk(const std::string& body, const WalkOptions& options, std::vector<Seen>& seen) {
    return walk_rows(body, options, [&](const Row& row) {
        seen.push_back({std::string(row.json),
                        row.fields.empty() ? "" : std::string(row.fields[0].text), row.index});
        return true;
    });
}

TEST(PageWalk, HandsOverRowsFieldsAndPaginationInOnePass) {
    const std::string body =
        R"({"data":[ {"id":"a","keyword":"x"} , {"keyword":"y\"z","id":"b"},{"id":"c"}],)"
        R"("pagination":{"total":3,"limit":1e3,"offset":0,"has_more":false},"extra":[1,2]})";
    static constexpr std::string_view kKeyword[] = {"keyword"};
    std::vector<Seen> seen;
    const WalkResult r = walk(body, {.fields = kKeyword}, seen);
    ASSERT_EQ(r.problem, WalkProblem::none);
    EXPECT_EQ(r.rows, 3u);
    EXPECT_FALSE(r.stopped);
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0].json, R"({"id":"a","keyword":"x"})");  // raw text, no trailing space
    EXPECT_EQ(seen[1].keyword, "y\"z");                      // unescaped
    EXPECT_EQ(seen[2].keyword, "");                           // absent field
    EXPECT_EQ(seen[2].index, 2u);
    EXPECT_TRUE(r.pagination.present);
    EXPECT_EQ(r.pagination.total, 3);
    EXPECT_EQ(r.pagination.limit, 1000);
}

TEST(PageWalk, StopsWhenTheVisitorSaysSoAndStillReadsPagination) {
    const std::string body = R"({"data":[{"i":1},{"i":2},{"i":3}],"pagination":{"total":9}})";
    int calls = 0;
    const WalkResult r = walk_rows(body, {}, [&](const Row&) { return ++calls < 2; });
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(r.rows, 2u);
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.pagination.total, 9);
}

// Each must_contain test runs at every vector level (none, AVX2, AVX-512; capped by what
// this CPU has), so each of the scans is checked against the thorough walk.
template <class Test>
void at_every_simd_level(Test&& test) {
    for (int level : {0, 1, 2}) {
        SCOPED_TRACE("vector level " + std::to_string(level));
        test(level);
    }
}

// must_contain passes over rows that cannot hold the value, but never one that might: other
// case, an escape anywhere in the row, or the value in another field (the visitor decides).
TEST(PageWalk, MustContainPassesOverOnlyRowsThatCannotMatch) {
    at_every_simd_level([&](int simd) {
        const std::string body = R"({"data":[)"
                                 R"({"keyword":"HVAC Repair Evanston","n":0},)"
                                 R"({"keyword":"hvac repair evanst\u006fn","n":1},)"
                                 R"({"keyword":"other","note":"hvac repair evanston!","n":2},)"
                                 R"({"keyword":"other","n":3},)"
                                 R"({"keyword":"hvac repair","n":4},)"
                                 R"({"keyword":"HVAC REPAIR EVANSTON","n":5}],)"
                                 R"("pagination":{"total":6}})";
        static constexpr std::string_view kKeyword[] = {"keyword"};
        std::vector<Seen> seen;
        const WalkResult r =
            walk(body, {.fields = kKeyword, .must_contain = "hvac repair evanston", .max_simd = simd}, seen);
        ASSERT_EQ(r.problem, WalkProblem::none);
        EXPECT_EQ(r.rows, 6u);  // every row counts towards the position, read or not
        std::vector<std::size_t> indexes;
        for (const auto& s : seen) indexes.push_back(s.index);
        EXPECT_EQ(indexes, (std::vector<std::size_t>{0, 1, 2, 5}));
        EXPECT_EQ(seen[1].keyword, "hvac repair evanston");
        EXPECT_EQ(r.pagination.total, 6);

        // Without the option every row is handed over.
        seen.clear();
        walk(body, {.fields = kKeyword}, seen);
        EXPECT_EQ(seen.size(), 6u);
    });
}

// Exactly the rows holding the value (any case) or an escape are read, wherever they fall
// against the 16-byte blocks of the search and at the very end of the page.
TEST(PageWalk, MustContainFindsEveryCandidateAtAnyAlignment) {
    at_every_simd_level([&](int simd) {
        const std::string needle = "Evanston";
        std::string body = R"({"data":[)";
        std::vector<bool> expected;
        unsigned seed = 12345;
        auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
        for (int row = 0; row < 400; ++row) {
            std::string text(next() % 40, 'x');
            const unsigned kind = next() % 5;
            if (kind == 0) text.insert(next() % (text.size() + 1), "evanston");
            if (kind == 1) text.insert(next() % (text.size() + 1), "EVANSTON");
            if (kind == 2) text.insert(next() % (text.size() + 1), "evanstoX");  // last byte differs
            if (kind == 3) text.insert(next() % (text.size() + 1), "\\n");
            if (row > 0) body += ",";
            body += R"({"k":")" + text + R"("})";
            expected.push_back(kind <= 1 || kind == 3);
        }
        body += "]}";
        for (int tail = 0; tail < 2; ++tail) {
            if (tail == 1) {  // a match in the last bytes of the page
                body.resize(body.size() - 2);
                body += R"(,{"k":"evanston"}]})";
                expected.push_back(true);
            }
            std::vector<bool> seen(expected.size(), false);
            const WalkResult r = walk_rows(body, {.must_contain = needle, .max_simd = simd}, [&](const Row& row) {
                seen[row.index] = true;
                return true;
            });
            ASSERT_EQ(r.problem, WalkProblem::none);
            EXPECT_EQ(r.rows, expected.size());
            EXPECT_EQ(seen, expected);
        }
    });
}

// With must_contain, rows are found from the page's brackets and only the marked ones are
// parsed. Against the walk without the option, on pages built to trip a bracket scanner:
// brackets, quotes and backslash runs inside strings, nested rows, members before and after
// data, odd spacing. The rows read must be exactly those holding the value or an escape.
TEST(PageWalk, MustContainReadsTheSameRowsAsTheFullWalk) {
    at_every_simd_level([&](int simd) {
        unsigned seed = 777;
        auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
        // Odd pages have no backslash at all (the scan then skips looking for escapes).
        const char* plain_pieces[] = {"x", "{", "}", "[", "]", "Evanston", "EVANSTON", "evan",
                                      ",", ":", " "};
        const char* escaped_pieces[] = {"\\\"", "\\\\", "\\\\\\\"", "\\u00e9", "\\/"};
        bool escapes = false;
        auto text = [&] {
            std::string out;
            for (unsigned n = next() % 6; n > 0; --n) {
                const unsigned k = next() % (std::size(plain_pieces) + std::size(escaped_pieces));
                if (k < std::size(plain_pieces))
                    out += plain_pieces[k];
                else if (escapes)
                    out += escaped_pieces[k - std::size(plain_pieces)];
            }
            return out;
        };
        auto space = [&] { return std::string(next() % 3 == 0 ? next() % 3 : 0, ' '); };
        static constexpr std::string_view kFields[] = {"k", "n"};
        for (int page = 0; page < 300; ++page) {
            escapes = page % 2 == 0;
            std::string body = "{" + space();
            if (next() % 2) body += R"("meta":[{"a":"]"},[1,{"b":[]}]],)" + space();
            // One pagination, before or after the rows (a name met twice is refused).
            const bool pagination_first = next() % 2;
            if (pagination_first) body += R"("pagination":{"total":)" + std::to_string(page) + "},";
            body += R"("data")" + space() + ":" + space() + "[" + space();
            const unsigned rows = next() % 40;
            for (unsigned r = 0; r < rows; ++r) {
                if (r > 0) body += space() + "," + space();
                body += R"({"k":")" + text() + R"(","n":)" + std::to_string(r);
                if (next() % 3 == 0) body += R"(,"nested":{"a":[")" + text() + R"(",{"b":"}"}]})";
                body += "}";
            }
            body += space() + "]";
            if (!pagination_first && next() % 2)
                body += R"(,"pagination":{"total":)" + std::to_string(page) + "}";
            body += space() + "}" + space();

            std::vector<Seen> all, filtered;
            const WalkResult full = walk(body, {.fields = kFields}, all);
            ASSERT_EQ(full.problem, WalkProblem::none) << body;
            const WalkResult r = walk(body, {.fields = kFields, .must_contain = "evanston", .max_simd = simd}, filtered);
            ASSERT_EQ(r.problem, WalkProblem::none) << body;
            EXPECT_EQ(r.rows, full.rows);
            EXPECT_EQ(r.pagination.present, full.pagination.present);
            EXPECT_EQ(r.pagination.total, full.pagination.total);
            std::vector<const Seen*> expected;
            for (const auto& row : all) {
                std::string lower = row.json;
                for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                if (lower.find("evanston") != std::string::npos || lower.find('\\') != std::string::npos)
                    expected.push_back(&row);
            }
            ASSERT_EQ(filtered.size(), expected.size()) << body;
            for (std::size_t i = 0; i < expected.size(); ++i) {
                EXPECT_EQ(filtered[i].index, expected[i]->index);
                EXPECT_EQ(filtered[i].json, expected[i]->json);
                EXPECT_EQ(filtered[i].keyword, expected[i]->keyword);  // unescaped alike
            }
        }
    });
}

// A page deeper than the bracket scan follows (as deep as a page may nest) stops the scan
// early; the thorough walk then refuses it whole, as the full walk does (issue 30: before,
// it went on and found the rows past where the scan gave up).
TEST(PageWalk, MustContainRefusesAPageDeeperThanTheScanFollows) {
    at_every_simd_level([&](int simd) {
        const std::string deep = std::string(80, '[') + std::string(80, ']');
        const std::string body = R"({"data":[{"k":)" + deep + R"(},{"k":"x"},)" +
                                 std::string(300, ' ') + R"({"k":"Evanston"}]})";
        std::vector<std::size_t> indexes;
        const WalkResult r = walk_rows(body, {.must_contain = "evanston", .max_simd = simd}, [&](const Row& row) {
            indexes.push_back(row.index);
            return true;
        });
        EXPECT_EQ(r.problem, WalkProblem::too_deep);
        EXPECT_TRUE(indexes.empty());
        EXPECT_EQ(walk_rows(body, {}, [](const Row&) { return true; }).problem,
                  WalkProblem::too_deep);
    });
}

// A page the bracket scan does not take as plain goes the thorough way, so must_contain
// reports the same problem as a walk without it, and hands nothing over first.
TEST(PageWalk, MustContainReportsMalformedPagesLikeTheFullWalk) {
    at_every_simd_level([&](int simd) {
        auto problem = [simd](const std::string& body, std::string_view must) {
            int handed = 0;
            const auto p = walk_rows(body, {.must_contain = must, .max_simd = simd}, [&](const Row&) {
                               ++handed;
                               return true;
                           }).problem;
            return std::pair{p, handed};
        };
        const std::string bodies[] = {
            "not json",
            "[1,2]",
            R"({"rows":[]})",
            R"({"data":{"a":1}})",
            R"({"data":[{"a":1},2]})",
            R"({"data":[{"a":1},[2]]})",
            R"({"data":[1,{"a":1}]})",
            R"({"data":["{"]})",
            R"({"data":[],"pagination":[1]})",
            R"({"data":[],"pagination":{"total":"many"}})",
            R"({"data":[],"pagination":{"total":1e30}})",
            R"({"data":[{"a":"zz"}],"pagination":{"total":1e30}})",
            R"({"data":[{"a":1}]} trailing)",
            R"({"data":[{"a":1}])",
            R"({"data":[{"a":1}]}})",
            R"({"data":[{"a":"unterminated}]})",
            R"({"d\u0061ta":[{"a":"zz"}],"data":[{"a":"zz"}]})",
            R"({"inner":{"data":[{"a":"zz"}]}})",
            R"({"data":[{"a":"zz"}],"data":[{"a":1}]})",
        };
        for (const auto& body : bodies) {
            const auto [plain, plain_handed] = problem(body, "");
            const auto [must, must_handed] = problem(body, "zz");
            EXPECT_EQ(must, plain) << body;
            if (plain != WalkProblem::none) {
                EXPECT_LE(must_handed, plain_handed) << body;
            }
        }
    });
}

// A row naming a field twice hands over the last value, all of it (found by the page_walk fuzz
// target: a string then a number left the number flagged as a string with the first's text).
TEST(PageWalk, ADuplicateFieldIsTheLastValueWholly) {
    at_every_simd_level([&](int simd) {
        const std::string body = R"({"data":[{"n":"text","n":1},{"n":2,"n":"x"}]})";
        static constexpr std::string_view kN[] = {"n"};
        for (std::string_view must : {std::string_view(), std::string_view("n")}) {
            // The views live only while the visitor runs: copied out.
            struct Field {
                std::string raw, text;
                bool is_string;
            };
            std::vector<Field> fields;
            walk_rows(body, {.fields = kN, .must_contain = must, .max_simd = simd}, [&](const Row& row) {
                const auto& f = row.fields[0];
                fields.push_back({std::string(f.raw), std::string(f.text), f.is_string});
                return true;
            });
            ASSERT_EQ(fields.size(), 2u);
            EXPECT_EQ(fields[0].raw, "1");
            EXPECT_FALSE(fields[0].is_string);
            EXPECT_EQ(fields[0].text, "");
            EXPECT_EQ(fields[1].raw, "\"x\"");
            EXPECT_TRUE(fields[1].is_string);
            EXPECT_EQ(fields[1].text, "x");
        }
    });
}

TEST(PageWalk, ReportsEachKindOfMalformedPage) {
    auto problem = [](const std::string& body) {
        return walk_rows(body, {}, [](const Row&) { return true; }).problem;
    };
    EXPECT_EQ(problem("not json"), WalkProblem::not_json);
    EXPECT_EQ(problem("[1,2]"), WalkProblem::not_json);
    EXPECT_EQ(problem(R"({"rows":[]})"), WalkProblem::no_data);
    EXPECT_EQ(problem(R"({"data":{"a":1}})"), WalkProblem::no_data);
    EXPECT_EQ(problem(R"({"data":[{"a":1},2]})"), WalkProblem::bad_row);
    EXPECT_EQ(problem(R"({"data":[],"pagination":[1]})"), WalkProblem::bad_pagination);
    EXPECT_EQ(problem(R"({"data":[],"pagination":{"total":"many"}})"), WalkProblem::bad_pagination);
    // A total no int64 holds is refused, not cast.
    EXPECT_EQ(problem(R"({"data":[],"pagination":{"total":1e30}})"), WalkProblem::bad_pagination);
    EXPECT_EQ(problem(R"({"data":[]})"), WalkProblem::none);
}

TEST(PageWalk, WorksWithoutSpareCapacityAndInsideAnotherWalk) {
    std::string tight = R"({"data":[{"a":1}]})";
    tight.shrink_to_fit();
    std::size_t inner_rows = 0;
    const WalkResult outer = walk_rows(tight, {}, [&](const Row&) {
        inner_rows = walk_rows(R"({"data":[{"b":1},{"b":2}]})", {}, [](const Row&) {
                         return true;
                     }).rows;
        return true;
    });
    EXPECT_EQ(outer.problem, WalkProblem::none);
    EXPECT_EQ(inner_rows, 2u);
}

// More threads than pooled parsers: every walk completes with its own rows.
TEST(PageWalk, ManyThreadsShareThePool) {
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
        threads.emplace_back([t, &wrong] {
            const std::string body = R"({"data":[{"t":)" + std::to_string(t) + "}]}";
            for (int i = 0; i < 200; ++i) {
                std::string seen;
                walk_rows(body, {}, [&](const Row& row) {
                    seen = row.json;
                    return true;
                });
                if (seen != R"({"t":)" + std::to_string(t) + "}") ++wrong;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace

// --- a hostile gateway's pages (issue 30) ----------------------------------------------------

namespace {

// A page of one row nested `depth` levels (the row itself is level 1), with brackets in a
// string beside it that must not count.
std::string page_of_depth(int depth) {
    std::string nested(static_cast<std::size_t>(depth - 1), '[');
    nested += '1';
    nested.append(static_cast<std::size_t>(depth - 1), ']');
    return R"({"data":[{"id":"x","s":"[[[[{{{{\"[[","n":)" + nested + R"(}],"pagination":{"total":1}})";
}

}  // namespace

TEST(PageWalk, RefusesARowNestedPastTheLimitAtEveryLevel) {
    using agency::gateway::kMaxRowDepth;
    for (int simd = 0; simd <= 2; ++simd) {
        for (const std::string_view needle : {"", "x"}) {
            const WalkOptions options{.must_contain = needle, .max_simd = simd};
            std::vector<Seen> seen;
            EXPECT_EQ(walk(page_of_depth(kMaxRowDepth), options, seen).problem, WalkProblem::none)
                << "simd " << simd << " needle '" << needle << "'";
            EXPECT_EQ(seen.size(), 1u);
            seen.clear();
            const WalkResult deeper = walk(page_of_depth(kMaxRowDepth + 1), options, seen);
            EXPECT_EQ(deeper.problem, WalkProblem::too_deep) << "simd " << simd;
            EXPECT_TRUE(seen.empty()) << "no row of a page too deep is handed over";
            seen.clear();
            // A million levels: refused before any parser sees it.
            EXPECT_EQ(walk(page_of_depth(1'000'000), options, seen).problem, WalkProblem::too_deep);
        }
    }
    EXPECT_NE(agency::gateway::describe(WalkProblem::too_deep).find("64 levels"),
              std::string_view::npos);
}

TEST(PageWalk, RefusesAPageNamingATopLevelMemberTwice) {
    // The fuzz finding (docs/security.md): one walk read the first data, the other the second.
    const std::string escaped = R"({"d\u0061ta":[],"data":[{"keyword":"x"}]})";
    const std::string twice = R"({"data":[{"keyword":"x"}],"pagination":{"total":1},)"
                              R"("pagination":{"total":9}})";
    for (int simd = 0; simd <= 2; ++simd) {
        for (const std::string_view needle : {"", "x"}) {
            const WalkOptions options{.must_contain = needle, .max_simd = simd};
            std::vector<Seen> seen;
            EXPECT_EQ(walk(escaped, options, seen).problem, WalkProblem::repeated_name)
                << "simd " << simd << " needle '" << needle << "'";
            EXPECT_EQ(walk(twice, options, seen).problem, WalkProblem::repeated_name);
        }
    }
    // A row may still name its own members as it likes (the last wins, as before).
    std::vector<Seen> seen;
    EXPECT_EQ(walk(R"({"data":[{"a":1,"a":2}]})", {}, seen).problem, WalkProblem::none);
}

TEST(PageWalk, ASelectionHoldsAtMostTheMemberLimitAndCountsTheRest) {
    using agency::gateway::kMaxSelectedMembers;
    std::string body = R"({"data":[{"id":"w")";
    const std::size_t members = kMaxSelectedMembers + 5;  // the id among them
    for (std::size_t i = 1; i < members; ++i) body += ",\"f" + std::to_string(i) + "\":1";
    body += "}]}";
    static constexpr std::string_view kDrop[] = {"nothing"};
    const agency::gateway::RowSelection select{.drop = kDrop};
    std::size_t left_out = 0;
    std::string selected;
    const WalkResult r = walk_rows(body, {.select = &select}, [&](const Row& row) {
        left_out = row.members_left_out;
        selected.assign(row.selected);
        return true;
    });
    ASSERT_EQ(r.problem, WalkProblem::none);
    EXPECT_EQ(left_out, 5u);
    EXPECT_NE(selected.find("\"f9999\":1"), std::string::npos);
    EXPECT_EQ(selected.find("\"f10000\":1"), std::string::npos);
}
