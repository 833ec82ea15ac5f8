// What the epoll thread of a PlainServer reads in a request head before a serving thread takes
// the request (net/plain_server.cpp): where the head ends, whether it holds a NUL, and the body
// length it announces. Outside input: each bounded by the head's own size.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace agency::net {

// The length of the head at the start of `bytes` (0: not all there), looking for its end
// from `from` (where the last look stopped).
std::size_t head_size(const std::string& bytes, std::size_t from);

// httplib reads header values as C strings: a NUL would cut a value short unseen (a session
// id "abc\0junk" would pass as "abc"). HTTP allows no NUL in a head, so such a head is
// refused whole.
bool has_nul(const char* head, std::size_t size);

// The body length a whole head announces: nullopt for none, a chunked body, or a length given
// twice or not as digits (the serving thread's httplib then reads and judges it).
std::optional<std::size_t> announced_length(std::string_view head);

}  // namespace agency::net
