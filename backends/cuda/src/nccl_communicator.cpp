#include "nccl_communicator.hpp"

#include <dlfcn.h>

#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>

#include "fhelium/error.hpp"

#if FHELIUM_HAVE_NCCL
#include <nccl.h>
#endif

namespace fhelium::cuda {

#if FHELIUM_HAVE_NCCL
namespace {

// The NCCL functions used, from libnccl.so.2 (loaded once).
struct Nccl {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRankConfig) init_rank_config = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string failure;  // empty when every function loaded
};

const Nccl& nccl() {
  static const Nccl api = [] {
    Nccl n;
    void* library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      n.failure = std::string("libnccl.so.2 did not load (") + dlerror() + ")";
      return n;
    }
    const auto load = [&](auto& function, const char* name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
      if (function == nullptr && n.failure.empty()) n.failure = std::string("libnccl.so.2 has no ") + name;
    };
    load(n.get_version, "ncclGetVersion");
    load(n.get_unique_id, "ncclGetUniqueId");
    load(n.init_rank_config, "ncclCommInitRankConfig");
    load(n.async_error, "ncclCommGetAsyncError");
    load(n.abort, "ncclCommAbort");
    load(n.destroy, "ncclCommDestroy");
    load(n.broadcast, "ncclBroadcast");
    load(n.group_start, "ncclGroupStart");
    load(n.group_end, "ncclGroupEnd");
    load(n.error_string, "ncclGetErrorString");
    return n;
  }();
  return api;
}

void check(ncclResult_t result, const char* what) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  throw BackendError(std::string("NCCL ") + what + ": " + nccl().error_string(result));
}

// The ranks of this process joining one id. NCCL refuses two ranks on one
// GPU, and the other ranks would wait for the timeout: the second is refused
// here at once, and the ranks already waiting see it.
class Joining {
 public:
  // Registers `device` for `id`; throws when a rank of this process already holds it.
  void enter(const CommunicatorId& id, int device) {
    std::lock_guard lock(mutex_);
    Entry& e = entries_[id];
    ++e.inside;
    if (!e.devices.insert(device).second) {
      e.failure = "two ranks on device " + std::to_string(device) + " (NCCL needs one GPU per rank)";
      const std::string message = "cuda join_communicator: " + e.failure;
      leave_locked(id);  // may erase e
      throw BackendError(message);
    }
  }
  // Why another rank of this id failed, or empty.
  std::string failure(const CommunicatorId& id) {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(id);
    return it == entries_.end() ? std::string() : it->second.failure;
  }
  void leave(const CommunicatorId& id) {
    std::lock_guard lock(mutex_);
    leave_locked(id);
  }

 private:
  struct Entry {
    std::set<int> devices;
    std::string failure;
    int inside = 0;
  };
  void leave_locked(const CommunicatorId& id) {
    const auto it = entries_.find(id);
    if (it != entries_.end() && --it->second.inside == 0) entries_.erase(it);
  }
  std::mutex mutex_;
  std::map<CommunicatorId, Entry> entries_;
};

Joining& joining() {
  static Joining j;
  return j;
}

// A non-blocking communicator's calls return while NCCL still issues them:
// waits until it has, at most `timeout` (or until `failed` says why not),
// then aborts it.
void wait_issued(ncclComm_t& comm, std::chrono::milliseconds timeout, const char* what,
                 const std::function<std::string()>& failed = {}) {
  const auto abort = [&comm] {
    nccl().abort(comm);
    comm = nullptr;  // freed: never destroyed again
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (failed) {
      const std::string why = failed();
      if (!why.empty()) {
        abort();
        throw BackendError(std::string("NCCL ") + what + ": another rank failed: " + why);
      }
    }
    ncclResult_t state = ncclSuccess;
    check(nccl().async_error(comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      abort();
      throw BackendError(std::string("NCCL ") + what + ": " + nccl().error_string(state));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abort();
      throw BackendError(std::string("NCCL ") + what + ": not done after " + std::to_string(timeout.count()) +
                         " ms (a rank is missing or stuck); the communicator was aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

class NcclCommunicator final : public DeviceCommunicator {
 public:
  NcclCommunicator(std::shared_ptr<DeviceRuntime> runtime, ncclComm_t comm, std::chrono::milliseconds timeout)
      : runtime_(std::move(runtime)), comm_(comm), timeout_(timeout) {}
  ~NcclCommunicator() override {
    if (comm_ == nullptr) return;  // aborted
    runtime_->activate();
    nccl().destroy(comm_);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // In place: the root's buffer is the source, the others' the destination.
  void broadcast(Buffer& buffer, std::size_t bytes, int root) override {
    runtime_->refuse_during_capture("broadcast (collectives are not captured)");
    auto* device = dynamic_cast<DeviceBuffer*>(&buffer);
    if (device == nullptr) throw BackendError("cuda broadcast: the buffer does not belong to a CUDA backend");
    if (bytes > device->size_bytes()) {
      throw InvalidArgumentError("cuda broadcast: " + std::to_string(bytes) + " bytes in a buffer of " +
                                 std::to_string(device->size_bytes()));
    }
    if (comm_ == nullptr) throw BackendError("cuda broadcast: the NCCL communicator was aborted after an error");
    runtime_->activate();
    check(nccl().broadcast(device->data(), device->data(), bytes, ncclUint8, root, comm_, runtime_->stream()),
          "ncclBroadcast");
    if (groups_ == 0) wait_issued(comm_, timeout_, "ncclBroadcast");
  }
  void group_begin() override {
    check(nccl().group_start(), "ncclGroupStart");
    ++groups_;
  }
  void group_end() override {
    --groups_;
    check(nccl().group_end(), "ncclGroupEnd");
    if (groups_ == 0) wait_issued(comm_, timeout_, "ncclGroupEnd");
  }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  ncclComm_t comm_;
  std::chrono::milliseconds timeout_;
  int groups_ = 0;
};

}  // namespace

std::string nccl_status() {
  if (!nccl().failure.empty()) return "NCCL: " + nccl().failure;
  int version = 0;
  check(nccl().get_version(&version), "ncclGetVersion");
  return "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

bool nccl_loads() { return nccl().failure.empty(); }

std::optional<CommunicatorId> nccl_communicator_id() {
  if (!nccl().failure.empty()) return std::nullopt;
  static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<CommunicatorId>);
  ncclUniqueId unique{};
  check(nccl().get_unique_id(&unique), "ncclGetUniqueId");
  CommunicatorId id;
  std::memcpy(id.data(), &unique, id.size());
  return id;
}

std::unique_ptr<DeviceCommunicator> join_nccl_communicator(std::shared_ptr<DeviceRuntime> runtime,
                                                           const CommunicatorId& id, int ranks, int rank,
                                                           std::chrono::milliseconds timeout) {
  if (!nccl().failure.empty()) throw BackendError("cuda join_communicator: NCCL: " + nccl().failure);
  ncclUniqueId unique{};
  std::memcpy(&unique, id.data(), id.size());
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a missing rank ends in a timeout, not a hang
  runtime->activate();
  joining().enter(id, runtime->device());
  struct Leave {
    const CommunicatorId& id;
    ~Leave() { joining().leave(id); }
  } leave{id};
  ncclComm_t comm = nullptr;
  const ncclResult_t started = nccl().init_rank_config(&comm, ranks, unique, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress && comm != nullptr) nccl().abort(comm);
  check(started, "ncclCommInitRankConfig");
  wait_issued(comm, timeout, "ncclCommInitRankConfig", [&id] { return joining().failure(id); });
  return std::make_unique<NcclCommunicator>(std::move(runtime), comm, timeout);
}

#else

std::string nccl_status() { return "NCCL: not built (nccl.h was not found at build time)"; }

bool nccl_loads() { return false; }

std::optional<CommunicatorId> nccl_communicator_id() { return std::nullopt; }

std::unique_ptr<DeviceCommunicator> join_nccl_communicator(std::shared_ptr<DeviceRuntime>, const CommunicatorId&, int,
                                                           int, std::chrono::milliseconds) {
  throw BackendError("cuda join_communicator: " + nccl_status());
}

#endif

}  // namespace fhelium::cuda
