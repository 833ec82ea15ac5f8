#include "base/periodic.hpp"

#include <exception>
#include <utility>

#include "base/log.hpp"

namespace agency::base {

Periodic::Periodic(Options options, Round round)
    : thread_([options = std::move(options), round = std::move(round)](std::stop_token stop) {
          const Clock& clock = Clock::or_system(options.clock);
          if (!options.at_once && !clock.sleep_for(options.period, stop)) return;
          do {
              try {
                  round(stop);
              } catch (const std::exception& e) {
                  log::warn("{}: {}", options.what, e.what());
              }
          } while (clock.sleep_for(options.period, stop));
      }) {}

void Periodic::stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
}

}  // namespace agency::base
