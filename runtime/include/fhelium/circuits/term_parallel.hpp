// Term-parallel y = M x over a DeviceGroup (docs/multi-device.md). The
// baby-step rotations of x are dealt over the ranks (every ranks-th one,
// hoisted) and broadcast from their owner; the giant groups are dealt the
// same way (LinearTransform::part); each rank sums its groups from all the
// baby rotations, all_reduce_sum adds the ranks' sums, and each rank
// rescales once. Every rank returns the same residues, equal to
// whole.with_horner_giants(false).apply(...) on one device; a rank does
// about (babies + giants) / ranks key switches.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/runtime/device_group.hpp"
#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

class TermParallelTransform {
 public:
  // The rotation keys rank `rank` needs: its babies and its giants.
  static std::vector<long> rotation_steps(const LinearTransform& whole, std::size_t rank, std::size_t ranks);

  // This rank's share, prepared for inputs in state `x` and linked to
  // `engine` with `keys` (borrowed: both must outlive this object; they
  // need rotation_steps(whole, rank, ranks) only).
  TermParallelTransform(const LinearTransform& whole, const Engine& engine, const ValueState& x, const GaloisKeys& keys,
                        std::size_t rank, std::size_t ranks);
  TermParallelTransform(TermParallelTransform&&) noexcept;
  ~TermParallelTransform();

  // This rank's key switches per apply: its hoisted babies and its giants.
  std::size_t key_switches() const;
  // Called by every rank with the same x: y = M x, rescaled.
  Ciphertext apply(runtime::Communicator& communicator, const Ciphertext& x) const;

 private:
  std::vector<long> babies_;       // every baby step of the whole transform, in broadcast order
  std::vector<long> own_babies_;   // the ones this rank rotates
  std::vector<long> used_babies_;  // the ones its giant groups read
  std::size_t rank_;
  std::size_t ranks_;
  std::size_t giant_rotations_;
  std::string agreement_;  // what every rank must agree on: the whole transform, x's state, the ranks
  const Engine* engine_;
  std::unique_ptr<runtime::Executable> rotations_;  // x -> its rotations by own_babies_ (none: empty)
  std::unique_ptr<runtime::Executable> groups_;     // x and the used rotations -> this rank's unrescaled sum
  mutable bool agreed_ = false;
};

}  // namespace fhelium::circuits
