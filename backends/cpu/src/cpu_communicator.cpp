#include "cpu_communicator.hpp"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cpu_types.hpp"
#include "fhelium/error.hpp"

namespace fhelium::cpu {
namespace {

// One group's meeting point: a barrier that also passes each rank's buffer.
class Group {
 public:
  Group(int ranks, std::chrono::milliseconds timeout)
      : ranks_(ranks), timeout_(timeout), buffers_(static_cast<std::size_t>(ranks)) {}

  int ranks() const { return ranks_; }

  // Waits until every rank has arrived; returns every rank's buffer. A
  // timeout breaks the group for good: a late rank must not copy from a
  // buffer its root has already released.
  std::vector<CpuBuffer*> arrive(int rank, CpuBuffer* buffer, const char* what) {
    std::unique_lock lock(mutex_);
    if (broken_) throw BackendError(std::string("cpu ") + what + ": " + *broken_);
    buffers_[static_cast<std::size_t>(rank)] = buffer;
    const std::uint64_t call = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      released_ = buffers_;
      ++generation_;
      all_arrived_.notify_all();
      return released_;
    }
    all_arrived_.wait_for(lock, timeout_, [&] { return generation_ != call || broken_; });
    if (generation_ == call) {
      if (!broken_) {
        broken_ = "rank " + std::to_string(rank) + " waited " + std::to_string(timeout_.count()) +
                  " ms for the other ranks of its communicator";
        all_arrived_.notify_all();
      }
      throw BackendError(std::string("cpu ") + what + ": " + *broken_);
    }
    return released_;
  }

 private:
  const int ranks_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  std::uint64_t generation_ = 0;
  int arrived_ = 0;
  std::vector<CpuBuffer*> buffers_;
  std::vector<CpuBuffer*> released_;  // read by the waiters before any of them can complete the next call
  std::optional<std::string> broken_;
};

class CpuCommunicator final : public DeviceCommunicator {
 public:
  CpuCommunicator(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}

  void broadcast(Buffer& buffer, std::size_t bytes, int root) override {
    if (root < 0 || root >= group_->ranks()) {
      throw InvalidArgumentError("cpu broadcast: root " + std::to_string(root) + " is not a rank of 0.." +
                                 std::to_string(group_->ranks() - 1));
    }
    auto* mine = dynamic_cast<CpuBuffer*>(&buffer);
    if (mine == nullptr) throw BackendError("cpu broadcast: the buffer does not belong to a cpu backend");
    if (bytes > mine->size_bytes()) {
      throw InvalidArgumentError("cpu broadcast: " + std::to_string(bytes) + " bytes into a buffer of " +
                                 std::to_string(mine->size_bytes()));
    }
    const std::vector<CpuBuffer*> all = group_->arrive(rank_, mine, "broadcast");
    const CpuBuffer* from = all[static_cast<std::size_t>(root)];
    if (bytes > from->size_bytes()) {
      throw InvalidArgumentError("cpu broadcast: " + std::to_string(bytes) + " bytes from a root buffer of " +
                                 std::to_string(from->size_bytes()));
    }
    if (rank_ != root) std::memcpy(mine->data(), from->data(), bytes);
    group_->arrive(rank_, mine, "broadcast");  // the root's buffer stays as it is until every copy is done
  }

 private:
  std::shared_ptr<Group> group_;
  int rank_;
};

// The groups of this library, by id; an id also carries the registry's
// address, so an id from another copy of the library is refused.
struct Registry {
  std::mutex mutex;
  std::condition_variable changed;
  struct Pending {
    std::shared_ptr<Group> group;
    int joined = 0;       // ranks that arrived
    int inside = 0;       // ranks still in join_cpu_communicator
    std::string failure;  // set by the first rank that gave up: the others give up too
  };
  std::map<std::uint64_t, Pending> pending;
  std::atomic<std::uint64_t> next{1};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

CommunicatorId new_communicator_id() {
  CommunicatorId id{};
  const std::uint64_t serial = registry().next++;
  const auto address = reinterpret_cast<std::uintptr_t>(&registry());
  std::memcpy(id.data(), &serial, sizeof serial);
  std::memcpy(id.data() + sizeof serial, &address, sizeof address);
  return id;
}

std::unique_ptr<DeviceCommunicator> join_cpu_communicator(const CommunicatorId& id, int ranks, int rank,
                                                          std::chrono::milliseconds timeout) {
  std::uint64_t serial = 0;
  std::uintptr_t address = 0;
  std::memcpy(&serial, id.data(), sizeof serial);
  std::memcpy(&address, id.data() + sizeof serial, sizeof address);
  Registry& r = registry();
  if (address != reinterpret_cast<std::uintptr_t>(&r) || serial == 0 || serial >= r.next) {
    throw InvalidArgumentError("cpu join_communicator: the id was not made by this process's cpu backend");
  }
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw InvalidArgumentError("cpu join_communicator: rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                               " ranks");
  }
  std::unique_lock lock(r.mutex);
  Registry::Pending& p = r.pending[serial];
  if (!p.group) p.group = std::make_shared<Group>(ranks, timeout);
  ++p.inside;
  const auto leave = [&] {
    if (--p.inside == 0) r.pending.erase(serial);  // p is gone after this
  };
  if (!p.failure.empty() || p.group->ranks() != ranks) {
    const std::string why = !p.failure.empty()
                                ? p.failure
                                : "rank " + std::to_string(rank) + " joins with " + std::to_string(ranks) +
                                      " ranks, the communicator has " + std::to_string(p.group->ranks());
    leave();
    throw BackendError("cpu join_communicator: " + why);
  }
  auto group = p.group;
  ++p.joined;
  r.changed.notify_all();
  const bool all = r.changed.wait_for(lock, timeout, [&] { return p.joined == ranks || !p.failure.empty(); });
  if (!all || p.joined != ranks) {
    if (p.failure.empty()) {
      p.failure = "rank " + std::to_string(rank) + " waited " + std::to_string(timeout.count()) + " ms for the other " +
                  std::to_string(ranks - 1) + " ranks to join";
    }
    const std::string why = p.failure;
    r.changed.notify_all();
    leave();
    throw BackendError("cpu join_communicator: " + why);
  }
  leave();
  return std::make_unique<CpuCommunicator>(std::move(group), rank);
}

}  // namespace fhelium::cpu
