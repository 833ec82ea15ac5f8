// Reads the pages of one long scan, fetching the next page while the caller walks this one:
// at one call in flight a scan then costs about the gateway's own paging time instead of the
// gateway's time plus the walk's, page after page.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>

#include "gateway/client.hpp"

namespace agency::gateway {

class PageReader {
public:
    // `query` without offset: read() sets it. Reads stop when `stop` fires.
    PageReader(Client& client, ReadQuery query, std::stop_token stop);
    // A page fetched ahead and never asked for is abandoned (its GET cancelled, at most one).
    ~PageReader();
    PageReader(const PageReader&) = delete;
    PageReader& operator=(const PageReader&) = delete;

    // The page at `offset` (read_body: walk it with Client::walk). When `ahead` is given, the
    // page at that offset is fetched meanwhile on a helper thread (unless more scans than
    // cores are running: then it is read when asked for); ask for it next. A page
    // fetched ahead for another offset is dropped and this one read instead, so a wrong guess
    // costs a read, never a wrong page. Throws what Client::read_body throws.
    Page read(std::int64_t offset, std::optional<std::int64_t> ahead = std::nullopt);

private:
    struct Worker;
    Client& client_;
    ReadQuery query_;
    std::stop_token stop_;
    std::unique_ptr<Worker> worker_;  // started by the first read with `ahead`
};

}  // namespace agency::gateway
