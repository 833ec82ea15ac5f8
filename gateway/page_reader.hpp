// Reads the pages of one long scan, fetching the next pages while the caller walks this one:
// at one call in flight a scan then costs about the gateway's own paging time instead of the
// gateway's time plus the walk's, page after page.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <vector>

#include "gateway/client.hpp"
#include "gateway/retry.hpp"

namespace agency::gateway {

// How a page's rows begin: up to 512 bytes from its "data" member (short of "pagination" when
// that follows, since it echoes the offset); "" when the page has no "data" member. Two pages
// of a scan that begin alike hold the same rows: the gateway did not move to the offset asked.
std::string_view rows_begin(std::string_view body);

class PageReader {
public:
    // Pages of query.limit rows (set it); read() sets the offset. Reads stop when `stop` fires.
    PageReader(Client& client, ReadQuery query, std::stop_token stop);
    // Pages fetched ahead and never asked for are abandoned (their GETs cancelled).
    ~PageReader();
    PageReader(const PageReader&) = delete;
    PageReader& operator=(const PageReader&) = delete;

    // The page at `offset` (read_body: walk it with Client::walk). When the resource's `total`
    // is known (from an earlier page), the next kAhead pages below it are fetched meanwhile on
    // helper threads, unless more scans than cores are running (then each page is read when
    // asked for). A page fetched ahead for an offset not asked for is dropped and the asked one
    // read, so a wrong guess costs a read, never a wrong page. Throws what read_body throws.
    Page read(std::int64_t offset, std::optional<std::int64_t> total = std::nullopt);

    static constexpr int kAhead = 2;

private:
    struct Worker;
    Client& client_;
    ReadQuery query_;
    // The deadline of the scope the reader was made in (DeadlineScope::current()), which pages
    // read ahead on other threads keep too.
    std::optional<SteadyTime> deadline_;
    std::chrono::milliseconds budget_{0};
    std::stop_token stop_;
    std::vector<std::unique_ptr<Worker>> workers_;  // started when first needed, up to kAhead
};

}  // namespace agency::gateway
