#include "fhelium/work_queue.hpp"

#include <utility>

namespace fhelium {

WorkQueue::WorkQueue() : worker_([this] { work(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

std::uint64_t WorkQueue::submit(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  tasks_.push_back(std::move(task));
  changed_.notify_all();
  return ++submitted_;
}

std::uint64_t WorkQueue::last_ticket() const {
  std::lock_guard lock(mutex_);
  return submitted_;
}

bool WorkQueue::done(std::uint64_t ticket) const {
  std::lock_guard lock(mutex_);
  return completed_ >= ticket;
}

void WorkQueue::wait(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return completed_ >= ticket; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WorkQueue::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and everything has run
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    ++completed_;
    changed_.notify_all();
  }
}

}  // namespace fhelium
