// A throwaway CA and a server certificate signed by it, made with openssl(1) in `dir`: ca.pem,
// server.pem and server.key, the server's certificate for `subject_alt_name` (e.g.
// "IP:127.0.0.1"). Returns false when openssl failed.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace agency::testing {

inline bool make_test_ca(const std::filesystem::path& dir, const std::string& subject_alt_name) {
    std::filesystem::create_directories(dir);
    const std::string script =
        "cd '" + dir.string() + "' && "
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=agency test CA' "
        "-keyout ca.key -out ca.pem >/dev/null 2>&1 && "
        "openssl req -newkey rsa:2048 -nodes -subj '/CN=agency test server' -keyout server.key "
        "-out server.csr >/dev/null 2>&1 && "
        "printf 'subjectAltName=" + subject_alt_name + "\\n' > ext.cnf && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile ext.cnf -out server.pem >/dev/null 2>&1";
    return std::system(script.c_str()) == 0;
}

}  // namespace agency::testing
