#include "fhelium/runtime/device_group.hpp"

#include <exception>
#include <sstream>
#include <thread>

#include "fhelium/error.hpp"
#include "fhelium/serialization.hpp"
#include "rendezvous.hpp"

namespace fhelium::runtime {
namespace {

// One stored object on the host: a value's state or a key's digits and
// Galois element, and its residues exactly as the sender's backend stores them.
struct StagedItem {
  ValueState state;
  int digits = 0;
  std::uint32_t galois_element = 0;
  std::vector<std::uint8_t> bytes;
};

// What one rank leaves for a collective that moves data.
struct Staged {
  Fingerprint context{};
  std::vector<StagedItem> items;
};

std::size_t key_bytes(const Context& ctx) {
  return static_cast<std::size_t>(ctx.key_digits()) * 2 * static_cast<std::size_t>(ctx.key_limbs()) *
         ctx.ring_degree() * stored_word_bytes(ctx.word_size());
}

std::size_t value_bytes(const Context& ctx, const ValueState& state) {
  return state.words(ctx) * stored_word_bytes(ctx.word_size());
}

StagedItem stage(const Engine& engine, const Value& value, TransferStats& stats) {
  StagedItem item;
  item.state = value.state;
  item.bytes.resize(value_bytes(engine.context(), value.state));
  engine.backend().download(*value.buffer, item.bytes.data(), item.bytes.size());
  stats.bytes_sent += item.bytes.size();
  return item;
}

StagedItem stage(const Engine& engine, const SwitchKey& key, std::uint32_t galois_element, TransferStats& stats) {
  StagedItem item;
  item.digits = key.digits;
  item.galois_element = galois_element;
  item.bytes.resize(key_bytes(engine.context()));
  engine.backend().download(*key.buffer, item.bytes.data(), item.bytes.size());
  stats.bytes_sent += item.bytes.size();
  return item;
}

std::shared_ptr<Buffer> unstage_bytes(const Engine& engine, const StagedItem& item, std::size_t expected,
                                      TransferStats& stats) {
  if (item.bytes.size() != expected) {
    throw CommunicatorError("received " + std::to_string(item.bytes.size()) + " bytes, expected " +
                            std::to_string(expected) + " for this rank's context");
  }
  std::shared_ptr<Buffer> buffer = engine.backend().allocate(expected);
  engine.backend().upload(*buffer, item.bytes.data(), expected);
  stats.bytes_received += expected;
  return buffer;
}

template <class V>
V unstage_value(const Engine& engine, const StagedItem& item, TransferStats& stats) {
  V out;
  out.state = item.state;
  out.state.context_id = engine.context().id();
  out.buffer = unstage_bytes(engine, item, value_bytes(engine.context(), item.state), stats);
  return out;
}

SwitchKey unstage_key(const Engine& engine, const StagedItem& item, TransferStats& stats) {
  if (item.digits != engine.context().key_digits()) {
    throw CommunicatorError("received a key of " + std::to_string(item.digits) + " digits, this rank's context has " +
                            std::to_string(engine.context().key_digits()));
  }
  SwitchKey out;
  out.context_id = engine.context().id();
  out.digits = item.digits;
  out.buffer = unstage_bytes(engine, item, key_bytes(engine.context()), stats);
  return out;
}

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

}  // namespace

Communicator::Communicator(std::shared_ptr<detail::Rendezvous> rendezvous, int rank)
    : rendezvous_(std::move(rendezvous)), rank_(rank) {}

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

// Root-to-all of one staged batch; `unstage` turns the batch into the result.
template <class Result, class Stage, class Unstage>
Result broadcast_staged(detail::Rendezvous& rendezvous, const Engine& engine, int rank, int root, bool has_value,
                        const char* operation, TransferStats& stats, Stage stage_on_root, Unstage unstage) {
  if (root < 0 || root >= rendezvous.size()) {
    throw InvalidArgumentError(std::string(operation) + ": root " + std::to_string(root) + " is not a rank of 0.." +
                               std::to_string(rendezvous.size() - 1));
  }
  if ((rank == root) != has_value) {
    throw InvalidArgumentError(
        std::string(operation) + ": rank " + std::to_string(rank) +
        (rank == root ? " is the root and passed no value" : " is not the root and passed a value"));
  }
  std::shared_ptr<Staged> mine;
  if (rank == root) {
    mine = std::make_shared<Staged>();
    mine->context = context_fingerprint(engine.context());
    stage_on_root(*mine);
  }
  const auto all = rendezvous.exchange(rank, with_root(operation, root), mine);
  ++stats.collectives;
  return unstage(checked(engine, (*all)[static_cast<std::size_t>(root)].payload.get(), root, rank));
}

}  // namespace

namespace {
template <class V>
V broadcast_value(detail::Rendezvous& rendezvous, const Engine& engine, int rank, int root, const V* value,
                  TransferStats& stats) {
  return broadcast_staged<V>(
      rendezvous, engine, rank, root, value != nullptr, "broadcast", stats,
      [&](Staged& s) { s.items.push_back(stage(engine, *value, stats)); },
      [&](const Staged& s) { return rank == root ? *value : unstage_value<V>(engine, s.items[0], stats); });
}
}  // namespace

Ciphertext Communicator::broadcast(const Engine& engine, const Ciphertext* value, int root) {
  return broadcast_value(*rendezvous_, engine, rank_, root, value, stats_);
}

Plaintext Communicator::broadcast(const Engine& engine, const Plaintext* value, int root) {
  return broadcast_value(*rendezvous_, engine, rank_, root, value, stats_);
}

SwitchKey Communicator::broadcast(const Engine& engine, const SwitchKey* key, int root) {
  return broadcast_staged<SwitchKey>(
      *rendezvous_, engine, rank_, root, key != nullptr, "broadcast of a key", stats_,
      [&](Staged& s) { s.items.push_back(stage(engine, *key, 0, stats_)); },
      [&](const Staged& s) { return rank_ == root ? *key : unstage_key(engine, s.items[0], stats_); });
}

RelinKey Communicator::broadcast(const Engine& engine, const RelinKey* key, int root) {
  RelinKey out;
  static_cast<SwitchKey&>(out) = broadcast(engine, static_cast<const SwitchKey*>(key), root);
  return out;
}

GaloisKeys Communicator::broadcast(const Engine& engine, const GaloisKeys* keys, int root) {
  return broadcast_staged<GaloisKeys>(
      *rendezvous_, engine, rank_, root, keys != nullptr, "broadcast of Galois keys", stats_,
      [&](Staged& s) {
        for (const auto& [element, key] : keys->keys) s.items.push_back(stage(engine, key, element, stats_));
      },
      [&](const Staged& s) {
        if (rank_ == root) return *keys;
        GaloisKeys out;
        out.context_id = engine.context().id();
        for (const StagedItem& item : s.items) out.keys[item.galois_element] = unstage_key(engine, item, stats_);
        return out;
      });
}

Ciphertext Communicator::scatter(const Engine& engine, std::span<const Ciphertext> values, int root) {
  if (rank_ == root && values.size() != static_cast<std::size_t>(size())) {
    throw InvalidArgumentError("scatter: the root passed " + std::to_string(values.size()) +
                               " values, expected one per rank (" + std::to_string(size()) + ")");
  }
  return broadcast_staged<Ciphertext>(
      *rendezvous_, engine, rank_, root, !values.empty(), "scatter", stats_,
      [&](Staged& s) {
        for (int r = 0; r < size(); ++r) {
          s.items.push_back(r == root ? StagedItem{} : stage(engine, values[static_cast<std::size_t>(r)], stats_));
        }
      },
      [&](const Staged& s) {
        return rank_ == root ? values[static_cast<std::size_t>(root)]
                             : unstage_value<Ciphertext>(engine, s.items[static_cast<std::size_t>(rank_)], stats_);
      });
}

std::vector<Ciphertext> Communicator::all_gather(const Engine& engine, const Ciphertext& value) {
  if (size() == 1) {  // nobody to send to: no staging
    rendezvous_->exchange(rank_, "all_gather", nullptr);
    ++stats_.collectives;
    return {value};
  }
  auto mine = std::make_shared<Staged>();
  mine->context = context_fingerprint(engine.context());
  mine->items.push_back(stage(engine, value, stats_));
  const auto all = rendezvous_->exchange(rank_, "all_gather", mine);
  ++stats_.collectives;
  std::vector<Ciphertext> out;
  for (int r = 0; r < size(); ++r) {
    const Staged& s = checked(engine, (*all)[static_cast<std::size_t>(r)].payload.get(), r, rank_);
    out.push_back(r == rank_ ? value : unstage_value<Ciphertext>(engine, s.items[0], stats_));
  }
  return out;
}

std::vector<Ciphertext> Communicator::gather(const Engine& engine, const Ciphertext& value, int root) {
  if (root < 0 || root >= size()) {
    throw InvalidArgumentError("gather: root " + std::to_string(root) + " is not a rank of 0.." +
                               std::to_string(size() - 1));
  }
  std::shared_ptr<Staged> mine;
  if (rank_ != root) {
    mine = std::make_shared<Staged>();
    mine->context = context_fingerprint(engine.context());
    mine->items.push_back(stage(engine, value, stats_));
  }
  const auto all = rendezvous_->exchange(rank_, with_root("gather", root), mine);
  ++stats_.collectives;
  std::vector<Ciphertext> out;
  if (rank_ != root) return out;
  for (int r = 0; r < size(); ++r) {
    if (r == root) {
      out.push_back(value);
      continue;
    }
    const Staged& s = checked(engine, (*all)[static_cast<std::size_t>(r)].payload.get(), r, rank_);
    out.push_back(unstage_value<Ciphertext>(engine, s.items[0], stats_));
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
    for (int rank = 1; rank < ranks_; ++rank) threads.emplace_back(rank_main, rank);
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
