#include "fhelium/runtime/device_group.hpp"

#include <exception>
#include <optional>
#include <sstream>
#include <thread>

#include "fhelium/error.hpp"
#include "fhelium/serialization.hpp"
#include "rendezvous.hpp"

namespace fhelium::runtime {
namespace {

// One object of a collective: a value's state or a key's digits and Galois
// element, its size, and with host staging its residues exactly as the
// sender's backend stores them (with device collectives they move later).
struct StagedItem {
  ValueState state;
  int digits = 0;
  std::uint32_t galois_element = 0;
  std::size_t size = 0;
  std::vector<std::uint8_t> bytes;  // host staging only
};

// What one rank leaves for a collective that moves data.
struct Staged {
  Fingerprint context{};
  std::vector<StagedItem> items;
};

std::size_t key_bytes(const Context& ctx) { return ctx.key_words() * stored_word_bytes(ctx.word_size()); }

std::size_t value_bytes(const Context& ctx, const ValueState& state) {
  return state.words(ctx) * stored_word_bytes(ctx.word_size());
}

// One device broadcast of a collective: every rank issues the same list.
struct DeviceTransfer {
  Buffer* buffer;  // the root's own, or the receiver's new one
  std::size_t bytes;
  int root;
};

// How one rank's side of a collective moves its bytes: staged through the
// host with the metadata, or (device != nullptr) by device broadcasts
// issued once every rank has allocated its receiving buffers.
class Mover {
 public:
  Mover(const Engine& engine, DeviceCommunicator* device, TransferStats& stats, int rank)
      : engine_(engine), device_(device), stats_(stats), rank_(rank) {
    if (engine.backend().capturing()) {
      throw StateError("rank " + std::to_string(rank) +
                       ": a collective during a capture (collectives are not "
                       "captured: end the capture first)");
    }
  }
  // Part of the operation's name: every rank must move data the same way.
  const char* transport() const { return device_ ? " on device" : " staged"; }
  const Engine& engine() const { return engine_; }
  bool on_device() const { return device_ != nullptr; }

  // Runs `build` (the receiving side), then issue(): with device
  // collectives an error in `build` is first told to the other ranks.
  template <class Build>
  auto receive_then_issue(detail::Rendezvous& rendezvous, int rank, std::vector<DeviceTransfer>& transfers, Build build)
      -> decltype(build()) {
    if (!device_) {
      auto out = build();
      return out;
    }
    std::optional<decltype(build())> out;
    std::string failure;
    try {
      out.emplace(build());
    } catch (const std::exception& e) {
      failure = e.what();
    }
    issue(rendezvous, rank, transfers, failure);
    return std::move(*out);
  }

  StagedItem send(const Buffer& buffer, std::size_t bytes) {
    StagedItem item;
    item.size = bytes;
    if (!device_) {
      item.bytes.resize(bytes);
      engine_.backend().download(buffer, item.bytes.data(), bytes);
    }
    stats_.bytes_sent += bytes;
    return item;
  }
  StagedItem send(const Value& value) {
    StagedItem item = send(*value.buffer, value_bytes(engine_.context(), value.state));
    item.state = value.state;
    return item;
  }
  StagedItem send(const SwitchKey& key, std::uint32_t galois_element) {
    StagedItem item = send(*key.buffer, key_bytes(engine_.context()));
    item.digits = key.digits;
    item.galois_element = galois_element;
    return item;
  }

  // A buffer for `item` on this rank: filled now (staging) or by issue().
  std::shared_ptr<Buffer> receive(const StagedItem& item, std::size_t expected) {
    if (item.size != expected || (!device_ && item.bytes.size() != expected)) {
      throw CommunicatorError("rank " + std::to_string(rank_) + " received " + std::to_string(item.size) +
                              " bytes, expected " + std::to_string(expected) + " for its context");
    }
    std::shared_ptr<Buffer> buffer = engine_.backend().allocate(expected);
    if (!device_) engine_.backend().upload(*buffer, item.bytes.data(), expected);
    stats_.bytes_received += expected;
    return buffer;
  }

  // The device broadcasts, in the order every rank lists them. Every rank
  // first says whether it is ready (its receiving side built, or the error
  // it met), so that none enters a device collective the others will not.
  void issue(detail::Rendezvous& rendezvous, int rank, const std::vector<DeviceTransfer>& transfers,
             const std::string& failure = {}) const {
    if (!device_) {
      if (!failure.empty()) throw CommunicatorError(failure);
      return;
    }
    const auto all = rendezvous.exchange(rank, "ready", std::make_shared<std::string>(failure));
    for (std::size_t r = 0; r < all->size(); ++r) {
      const auto& theirs = *static_cast<const std::string*>((*all)[r].payload.get());
      if (!theirs.empty())
        throw CommunicatorError(static_cast<int>(r) == rank ? theirs : "rank " + std::to_string(r) + ": " + theirs);
    }
    if (transfers.empty()) return;
    device_->group_begin();
    try {
      for (const DeviceTransfer& t : transfers) device_->broadcast(*t.buffer, t.bytes, t.root);
    } catch (...) {  // an open group would hold this rank's later calls; the first error is the one reported
      try {
        device_->group_end();
      } catch (...) {
      }
      throw;
    }
    device_->group_end();
  }

  template <class V>
  V value(const StagedItem& item, std::vector<DeviceTransfer>& transfers, int from) {
    V out;
    out.state = item.state;
    out.state.context_id = engine_.context().id();
    out.buffer = receive(item, value_bytes(engine_.context(), item.state));
    transfers.push_back({out.buffer.get(), item.size, from});
    return out;
  }

  SwitchKey key(const StagedItem& item, std::vector<DeviceTransfer>& transfers, int from) {
    if (item.digits != engine_.context().key_digits()) {
      throw CommunicatorError("rank " + std::to_string(rank_) + " received a key of " + std::to_string(item.digits) +
                              " digits, its context has " + std::to_string(engine_.context().key_digits()));
    }
    SwitchKey out;
    out.context_id = engine_.context().id();
    out.digits = item.digits;
    out.buffer = receive(item, key_bytes(engine_.context()));
    transfers.push_back({out.buffer.get(), item.size, from});
    return out;
  }

 private:
  const Engine& engine_;
  DeviceCommunicator* device_;
  TransferStats& stats_;
  int rank_;
};

// The sender's context must be this rank's, parameter for parameter.
const Staged& checked(const Engine& engine, const void* payload, int from, int rank) {
  const auto& staged = *static_cast<const Staged*>(payload);
  const Fingerprint mine = context_fingerprint(engine.context());
  if (staged.context != mine) {
    throw CommunicatorError("rank " + std::to_string(rank) + " received from rank " + std::to_string(from) +
                            " a value of context " + to_hex(staged.context, 8) + ", its own context is " +
                            to_hex(mine, 8) + " (the ranks' parameters differ)");
  }
  return staged;
}

std::string with_root(const char* operation, int root) {
  return std::string(operation) + " (root " + std::to_string(root) + ")";
}

Buffer* own(const std::shared_ptr<Buffer>& buffer) { return buffer.get(); }

}  // namespace

Communicator::Communicator(std::shared_ptr<detail::Rendezvous> rendezvous, int rank)
    : rendezvous_(std::move(rendezvous)), rank_(rank) {}
Communicator::~Communicator() = default;

int Communicator::size() const { return rendezvous_->size(); }

void Communicator::barrier() {
  rendezvous_->exchange(rank_, "barrier", nullptr);
  ++stats_.collectives;
}

void Communicator::check_agreement(const std::string& what, const std::string& value) {
  const auto all = rendezvous_->exchange(rank_, "check_agreement(" + what + ")", std::make_shared<std::string>(value));
  ++stats_.collectives;
  const auto& reference = *static_cast<const std::string*>((*all)[0].payload.get());
  std::string differ;
  for (int r = 1; r < size(); ++r) {
    const auto& theirs = *static_cast<const std::string*>((*all)[static_cast<std::size_t>(r)].payload.get());
    if (theirs == reference) continue;
    std::size_t at = 0;
    while (at < theirs.size() && at < reference.size() && theirs[at] == reference[at]) ++at;
    const std::size_t line_start = reference.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t from = line_start == std::string::npos ? 0 : line_start + 1;
    const auto line = [&](const std::string& s) { return "'" + s.substr(from, s.find('\n', from) - from) + "'"; };
    differ += "; rank " + std::to_string(r) + " has " + line(theirs) + " where rank 0 has " + line(reference);
  }
  if (!differ.empty()) throw CommunicatorError("the ranks disagree on " + what + ": " + differ.substr(2));
}

namespace {
// What one rank says in connect(): its backend, and an error text or nothing.
struct ConnectOffer {
  std::string backend;
  bool available = false;
  std::optional<CommunicatorId> id;  // rank 0's, once the others said they can join
  std::string failure;
};

// Every failure of `all`, as "rank r <what>: failure; ...", or empty.
std::string failures(const std::vector<detail::Contribution>& all, const char* what) {
  std::string out;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto& offer = *static_cast<const ConnectOffer*>(all[r].payload.get());
    if (!offer.failure.empty()) out += "; rank " + std::to_string(r) + " " + what + ": " + offer.failure;
  }
  return out.empty() ? out : out.substr(2);
}
}  // namespace

bool Communicator::connect(const Engine& engine) {
  device_.reset();
  device_backend_ = nullptr;
  not_connected_.clear();
  // Whether every rank's backend, all of one kind, has device collectives.
  auto mine = std::make_shared<ConnectOffer>();
  mine->backend = engine.backend().name();
  try {
    mine->available = engine.backend().has_device_collectives();
  } catch (const Error& e) {
    mine->failure = e.what();
  }
  auto all = rendezvous_->exchange(rank_, "connect", mine);
  ++stats_.collectives;
  not_connected_ = failures(*all, "cannot tell whether it has device collectives");
  for (std::size_t r = 0; r < all->size() && not_connected_.empty(); ++r) {  // every rank decides the same
    const auto& offer = *static_cast<const ConnectOffer*>((*all)[r].payload.get());
    if (offer.backend != mine->backend) {
      not_connected_ = "rank " + std::to_string(r) + "'s backend is '" + offer.backend + "', rank " +
                       std::to_string(rank_) + "'s '" + mine->backend + "'";
    } else if (!offer.available) {
      not_connected_ = "rank " + std::to_string(r) + "'s backend '" + offer.backend + "' has no device collectives";
    }
  }
  if (!not_connected_.empty()) return false;
  // Rank 0 makes the id (only one: an NCCL id holds resources until it is joined).
  auto id = std::make_shared<ConnectOffer>();
  if (rank_ == 0) {
    try {
      id->id = engine.backend().communicator_id();
      if (!id->id) id->failure = "its backend made no communicator id";
    } catch (const Error& e) {
      id->failure = e.what();
    }
  }
  all = rendezvous_->exchange(rank_, "connect (id)", id);
  not_connected_ = failures(*all, "could not make an id");
  if (!not_connected_.empty()) return false;
  const CommunicatorId& root_id = *static_cast<const ConnectOffer*>((*all)[0].payload.get())->id;
  // A join that fails on any rank (NCCL refuses two ranks on one GPU, say)
  // leaves every rank on host staging, with the reason.
  auto joined = std::make_shared<ConnectOffer>();
  try {
    device_ = engine.backend().join_communicator(root_id, size(), rank_, rendezvous_->timeout());
  } catch (const Error& e) {
    joined->failure = e.what();
  }
  // A rank whose join failed at once waits here while the others' joins time out.
  all = rendezvous_->exchange(rank_, "connect (joined)", joined, 2);
  not_connected_ = failures(*all, "could not join");
  if (!not_connected_.empty()) {
    device_.reset();
    return false;
  }
  device_backend_ = &engine.backend();
  return true;
}

DeviceCommunicator* Communicator::device_for(const Engine& engine) const {
  return device_ && &engine.backend() == device_backend_ ? device_.get() : nullptr;
}

namespace {

// Root-to-all of the items `send_on_root` lists; `make` builds the result
// from the root's items (the root: from its own objects).
template <class Result, class Send, class Make>
Result broadcast_items(detail::Rendezvous& rendezvous, Mover& mover, int rank, int root, bool has_value,
                       const char* operation, TransferStats& stats, Send send_on_root, Make make) {
  if (root < 0 || root >= rendezvous.size()) {
    throw InvalidArgumentError(std::string(operation) + ": root " + std::to_string(root) + " is not a rank of 0.." +
                               std::to_string(rendezvous.size() - 1));
  }
  if ((rank == root) != has_value) {
    throw InvalidArgumentError(
        std::string(operation) + ": rank " + std::to_string(rank) +
        (rank == root ? " is the root and passed no value" : " is not the root and passed a value"));
  }
  std::vector<DeviceTransfer> transfers;
  if (rendezvous.size() == 1) {  // nobody to send to: the root keeps its own
    rendezvous.exchange(rank, with_root(operation, root), nullptr);
    ++stats.collectives;
    return make(Staged{}, transfers);
  }
  std::shared_ptr<Staged> mine;
  if (rank == root) {
    mine = std::make_shared<Staged>();
    mine->context = context_fingerprint(mover.engine().context());
    send_on_root(*mine, transfers);
  }
  const auto all = rendezvous.exchange(rank, with_root(operation, root) + mover.transport(), mine);
  ++stats.collectives;
  return mover.receive_then_issue(rendezvous, rank, transfers, [&] {
    return make(checked(mover.engine(), (*all)[static_cast<std::size_t>(root)].payload.get(), root, rank), transfers);
  });
}

}  // namespace

template <class V>
V Communicator::broadcast_value(const Engine& engine, const V* value, int root) {
  Mover mover(engine, device_for(engine), stats_, rank_);
  return broadcast_items<V>(
      *rendezvous_, mover, rank_, root, value != nullptr, "broadcast", stats_,
      [&](Staged& s, std::vector<DeviceTransfer>& t) {
        s.items.push_back(mover.send(*value));
        t.push_back({own(value->buffer), s.items.back().size, root});
      },
      [&](const Staged& s, std::vector<DeviceTransfer>& t) {
        return rank_ == root ? *value : mover.value<V>(s.items[0], t, root);
      });
}

Ciphertext Communicator::broadcast(const Engine& engine, const Ciphertext* value, int root) {
  return broadcast_value(engine, value, root);
}

Plaintext Communicator::broadcast(const Engine& engine, const Plaintext* value, int root) {
  return broadcast_value(engine, value, root);
}

SwitchKey Communicator::broadcast(const Engine& engine, const SwitchKey* key, int root) {
  Mover mover(engine, device_for(engine), stats_, rank_);
  return broadcast_items<SwitchKey>(
      *rendezvous_, mover, rank_, root, key != nullptr, "broadcast of a key", stats_,
      [&](Staged& s, std::vector<DeviceTransfer>& t) {
        s.items.push_back(mover.send(*key, 0));
        t.push_back({own(key->buffer), s.items.back().size, root});
      },
      [&](const Staged& s, std::vector<DeviceTransfer>& t) {
        return rank_ == root ? *key : mover.key(s.items[0], t, root);
      });
}

RelinKey Communicator::broadcast(const Engine& engine, const RelinKey* key, int root) {
  RelinKey out;
  static_cast<SwitchKey&>(out) = broadcast(engine, static_cast<const SwitchKey*>(key), root);
  return out;
}

GaloisKeys Communicator::broadcast(const Engine& engine, const GaloisKeys* keys, int root) {
  Mover mover(engine, device_for(engine), stats_, rank_);
  return broadcast_items<GaloisKeys>(
      *rendezvous_, mover, rank_, root, keys != nullptr, "broadcast of Galois keys", stats_,
      [&](Staged& s, std::vector<DeviceTransfer>& t) {
        for (const auto& [element, key] : keys->keys) {
          s.items.push_back(mover.send(key, element));
          t.push_back({own(key.buffer), s.items.back().size, root});
        }
      },
      [&](const Staged& s, std::vector<DeviceTransfer>& t) {
        if (rank_ == root) return *keys;
        GaloisKeys out;
        out.context_id = engine.context().id();
        for (const StagedItem& item : s.items) out.keys[item.galois_element] = mover.key(item, t, root);
        return out;
      });
}

// Host staging always: only the root's value r goes to rank r (device
// collectives here are broadcasts, which would send every value everywhere).
Ciphertext Communicator::scatter(const Engine& engine, std::span<const Ciphertext> values, int root) {
  if (rank_ == root && values.size() != static_cast<std::size_t>(size())) {
    throw InvalidArgumentError("scatter: the root passed " + std::to_string(values.size()) +
                               " values, expected one per rank (" + std::to_string(size()) + ")");
  }
  Mover mover(engine, nullptr, stats_, rank_);
  return broadcast_items<Ciphertext>(
      *rendezvous_, mover, rank_, root, !values.empty(), "scatter", stats_,
      [&](Staged& s, std::vector<DeviceTransfer>&) {
        for (int r = 0; r < size(); ++r) {
          s.items.push_back(r == root ? StagedItem{} : mover.send(values[static_cast<std::size_t>(r)]));
        }
      },
      [&](const Staged& s, std::vector<DeviceTransfer>& t) {
        return rank_ == root ? values[static_cast<std::size_t>(root)]
                             : mover.value<Ciphertext>(s.items[static_cast<std::size_t>(rank_)], t, root);
      });
}

std::vector<Ciphertext> Communicator::all_gather(const Engine& engine, const Ciphertext& value) {
  if (size() == 1) {  // nobody to send to: no staging
    rendezvous_->exchange(rank_, "all_gather", nullptr);
    ++stats_.collectives;
    return {value};
  }
  Mover mover(engine, device_for(engine), stats_, rank_);
  auto mine = std::make_shared<Staged>();
  mine->context = context_fingerprint(engine.context());
  mine->items.push_back(mover.send(value));
  const auto all = rendezvous_->exchange(rank_, std::string("all_gather") + mover.transport(), mine);
  ++stats_.collectives;
  std::vector<DeviceTransfer> transfers;
  return mover.receive_then_issue(*rendezvous_, rank_, transfers, [&] {
    std::vector<Ciphertext> out;
    for (int r = 0; r < size(); ++r) {
      const Staged& s = checked(engine, (*all)[static_cast<std::size_t>(r)].payload.get(), r, rank_);
      if (r == rank_) {
        out.push_back(value);
        transfers.push_back({own(value.buffer), s.items[0].size, r});
      } else {
        out.push_back(mover.value<Ciphertext>(s.items[0], transfers, r));
      }
    }
    return out;
  });
}

// Host staging always, as scatter.
std::vector<Ciphertext> Communicator::gather(const Engine& engine, const Ciphertext& value, int root) {
  if (root < 0 || root >= size()) {
    throw InvalidArgumentError("gather: root " + std::to_string(root) + " is not a rank of 0.." +
                               std::to_string(size() - 1));
  }
  Mover mover(engine, nullptr, stats_, rank_);
  std::shared_ptr<Staged> mine;
  if (rank_ != root) {
    mine = std::make_shared<Staged>();
    mine->context = context_fingerprint(engine.context());
    mine->items.push_back(mover.send(value));
  }
  const auto all = rendezvous_->exchange(rank_, with_root("gather", root), mine);
  ++stats_.collectives;
  std::vector<Ciphertext> out;
  if (rank_ != root) return out;
  std::vector<DeviceTransfer> unused;
  for (int r = 0; r < size(); ++r) {
    if (r == root) {
      out.push_back(value);
      continue;
    }
    const Staged& s = checked(engine, (*all)[static_cast<std::size_t>(r)].payload.get(), r, rank_);
    out.push_back(mover.value<Ciphertext>(s.items[0], unused, r));
  }
  return out;
}

Ciphertext Communicator::all_reduce_sum(const Engine& engine, const Ciphertext& value) {
  const std::vector<Ciphertext> all = all_gather(engine, value);
  for (int r = 0; r < size(); ++r) {
    ValueState theirs = all[static_cast<std::size_t>(r)].state;
    theirs.context_id = value.state.context_id;
    if (!(theirs == value.state)) {
      throw CommunicatorError("all_reduce_sum: rank " + std::to_string(r) + "'s value is " + theirs.describe() +
                              ", rank " + std::to_string(rank_) + "'s is " + value.state.describe());
    }
  }
  return engine.sum(all);
}

DeviceGroup::DeviceGroup(int ranks, GroupOptions options) : ranks_(ranks), options_(options) {
  if (ranks < 1) throw InvalidArgumentError("DeviceGroup: " + std::to_string(ranks) + " ranks, expected at least 1");
  if (options.timeout.count() <= 0) {
    throw InvalidArgumentError("DeviceGroup: timeout " + std::to_string(options.timeout.count()) +
                               " ms, expected a positive time");
  }
}

std::vector<TransferStats> DeviceGroup::run(const std::function<void(Communicator&)>& body) {
  auto rendezvous = std::make_shared<detail::Rendezvous>(ranks_, options_.timeout);
  std::vector<TransferStats> stats(static_cast<std::size_t>(ranks_));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks_));
  std::vector<char> started_failure(static_cast<std::size_t>(ranks_), 0);  // not vector<bool>: one byte per thread
  const auto rank_main = [&](int rank) {
    Communicator communicator(rendezvous, rank);
    try {
      body(communicator);
    } catch (const CommunicatorError& e) {
      errors[static_cast<std::size_t>(rank)] = std::current_exception();
      rendezvous->fail(e.what());
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(rank)] = std::current_exception();
      started_failure[static_cast<std::size_t>(rank)] =
          rendezvous->fail("rank " + std::to_string(rank) + " failed: " + e.what());
    } catch (...) {
      errors[static_cast<std::size_t>(rank)] = std::current_exception();
      started_failure[static_cast<std::size_t>(rank)] =
          rendezvous->fail("rank " + std::to_string(rank) + " failed with an unknown exception");
    }
    stats[static_cast<std::size_t>(rank)] = communicator.stats();
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(ranks_));
    try {
      for (int rank = 1; rank < ranks_; ++rank) threads.emplace_back(rank_main, rank);
    } catch (const std::exception& e) {  // the started ranks must not wait for the timeout
      rendezvous->fail(std::string("DeviceGroup could not start a thread per rank: ") + e.what());
      throw;  // after the started threads are joined
    }
    rank_main(0);
  }
  // The rank whose own error failed the group, else the first error (a timeout or a mismatch every rank saw).
  for (int rank = 0; rank < ranks_; ++rank) {
    if (started_failure[static_cast<std::size_t>(rank)]) std::rethrow_exception(errors[static_cast<std::size_t>(rank)]);
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return stats;
}

}  // namespace fhelium::runtime
