// libpq, loaded when the first PostgreSQL store opens (state/pg_internal.hpp says why).
#include <dlfcn.h>

#include "state/pg_internal.hpp"

namespace agency::state {

namespace {
LibPq load() {
    void* lib = ::dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = ::dlerror();
        throw StoreError(std::string("a PostgreSQL state store needs libpq, which cannot be "
                                     "loaded (") +
                             (why ? why : "libpq.so.5 not found") +
                             "): install Debian's libpq5 package",
                         StoreError::Kind::other, StoreError::Backend::postgres);
    }
    LibPq api;
#define AGENCY_LIBPQ_RESOLVE(name)                                                           \
    api.name = reinterpret_cast<decltype(&::name)>(::dlsym(lib, #name));                     \
    if (!api.name)                                                                           \
        throw StoreError("the libpq found lacks " #name ": install Debian's libpq5 package", \
                         StoreError::Kind::other, StoreError::Backend::postgres);
    AGENCY_LIBPQ_FUNCTIONS(AGENCY_LIBPQ_RESOLVE)
#undef AGENCY_LIBPQ_RESOLVE
    return api;  // the library stays loaded for the process's life
}
}  // namespace

const LibPq& libpq() {
    static const LibPq api = load();  // a failed load is tried again by the next store
    return api;
}

}  // namespace agency::state
