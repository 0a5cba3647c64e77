#include "rendezvous.hpp"

#include "fhelium/error.hpp"

namespace fhelium::runtime::detail {

Rendezvous::Rendezvous(int ranks, std::chrono::milliseconds timeout)
    : ranks_(ranks), timeout_(timeout), pending_(static_cast<std::size_t>(ranks)) {}

bool Rendezvous::fail(const std::string& reason) {
  std::lock_guard lock(mutex_);
  const bool first = !failure_;
  if (first) failure_ = reason;
  arrived_all_.notify_all();
  return first;
}

std::shared_ptr<const std::vector<Contribution>> Rendezvous::exchange(int rank, const std::string& operation,
                                                                      std::shared_ptr<const void> payload,
                                                                      int patience) {
  std::unique_lock lock(mutex_);
  if (failure_) throw CommunicatorError(*failure_);
  const std::uint64_t call = generation_;
  pending_[static_cast<std::size_t>(rank)] = Contribution{operation, std::move(payload)};
  std::shared_ptr<const std::vector<Contribution>> all;
  if (++arrived_ == ranks_) {
    auto everyone = std::make_shared<std::vector<Contribution>>();
    for (auto& p : pending_) {
      everyone->push_back(std::move(*p));
      p.reset();
    }
    arrived_ = 0;
    ++generation_;
    released_ = everyone;  // read by the waiting ranks before any of them can complete the next exchange
    arrived_all_.notify_all();
    all = std::move(everyone);
  } else {
    const bool done =
        arrived_all_.wait_for(lock, patience * timeout_, [&] { return generation_ != call || failure_.has_value(); });
    if (generation_ == call) {
      if (!done && !failure_) {
        std::string missing;
        for (int r = 0; r < ranks_; ++r) {
          if (!pending_[static_cast<std::size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
        failure_ = "collective " + std::to_string(call + 1) + " (" + operation + ", rank " + std::to_string(rank) +
                   "): rank" + (missing.find(',') == std::string::npos ? " " : "s ") + missing +
                   " did not arrive within " + std::to_string((patience * timeout_).count()) + " ms";
        arrived_all_.notify_all();
      }
      throw CommunicatorError(*failure_);
    }
    all = released_;
  }
  for (int r = 0; r < ranks_; ++r) {
    const std::string& theirs = (*all)[static_cast<std::size_t>(r)].operation;
    if (theirs != operation) {
      throw CommunicatorError("collective " + std::to_string(call + 1) + ": rank " + std::to_string(rank) + " called " +
                              operation + " while rank " + std::to_string(r) + " called " + theirs);
    }
  }
  return all;
}

}  // namespace fhelium::runtime::detail
