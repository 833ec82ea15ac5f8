// hmac_sha256 is computed on a SHA-256 fetched once (not OpenSSL's one-shot HMAC()); it must
// agree with RFC 4231 and with HMAC() for every key length.
#include <string>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/crypto.hpp"

namespace {

std::string hex(const std::string& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 0xF]};
    return out;
}

TEST(HmacSha256, Rfc4231Vectors) {
    using agency::crypto::hmac_sha256;
    EXPECT_EQ(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    EXPECT_EQ(hex(hmac_sha256(std::string(131, '\xaa'),
                              "Test Using Larger Than Block-Size Key - Hash Key First")),
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256, AgreesWithOpenSslForEveryKeyLength) {
    const std::string data = "cursor payload {\"o\":100}";
    for (std::size_t len = 0; len <= 130; ++len) {
        std::string key;
        for (std::size_t i = 0; i < len; ++i) key += static_cast<char>(i * 7 + 1);
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &n);
        EXPECT_EQ(agency::crypto::hmac_sha256(key, data),
                  std::string(reinterpret_cast<const char*>(digest), n))
            << "key length " << len;
    }
}

}  // namespace
