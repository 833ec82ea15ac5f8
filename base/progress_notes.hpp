// Notes on how the call running on this thread is going ("gateway answered 503; attempt 2 of
// 6 in 1.2 s"), for whoever follows it. The MCP core listens while it runs a call whose
// caller asked for progress; the gateway client reports its retries. Neither knows the other:
// both know only this. Thread-local, so a note never reaches another call, and a listener
// never outlives the call that installed it.
#pragma once

#include <functional>
#include <string_view>

namespace agency::base {

class ProgressNotes {
public:
    using Listener = std::function<void(std::string_view note)>;

    // Listens on this thread for its lifetime; the previous listener (if any) is restored after.
    class Scope {
    public:
        explicit Scope(const Listener& listener) : previous_(current_) { current_ = &listener; }
        ~Scope() { current_ = previous_; }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        const Listener* previous_;
    };

    // Tells this thread's listener, if there is one.
    static void report(std::string_view note) {
        if (current_ != nullptr && *current_) (*current_)(note);
    }

private:
    static inline thread_local const Listener* current_ = nullptr;
};

}  // namespace agency::base
