// A stream for host backends: one worker thread that runs submitted tasks in
// order. Tickets number the tasks; waiting on a ticket waits for that task
// and everything before it. A task's exception is kept and rethrown by the
// next wait, like an asynchronous device error.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace fhelium {

class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();  // waits for submitted tasks
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Returns the task's ticket.
  std::uint64_t submit(std::function<void()> task);
  // The ticket of the last submitted task (0: none yet).
  std::uint64_t last_ticket() const;
  bool done(std::uint64_t ticket) const;
  // Waits until `ticket` has run; rethrows a kept task error.
  void wait(std::uint64_t ticket);
  void drain() { wait(last_ticket()); }

 private:
  void work();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace fhelium
