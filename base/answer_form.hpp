// Which form of an answer the caller's model reads, for what sizes the answer: a host that shows
// its model structuredContent alone gets it lean (server/lean_answer.hpp), and max_bytes is
// counted on that form. The server sets it around a tool's handler on the handler's thread.
#pragma once

namespace agency::base {

enum class AnswerForm { full, lean };

class AnswerForms {
public:
    // This thread's form for its lifetime; the previous one is restored after.
    class Scope {
    public:
        explicit Scope(AnswerForm form) : previous_(current_) { current_ = form; }
        ~Scope() { current_ = previous_; }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        AnswerForm previous_;
    };

    static AnswerForm current() { return current_; }

private:
    static inline thread_local AnswerForm current_ = AnswerForm::full;
};

}  // namespace agency::base
