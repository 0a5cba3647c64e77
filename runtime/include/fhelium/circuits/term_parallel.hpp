// Term-parallel y = M x over a DeviceGroup (docs/multi-device.md): rank r
// computes the giant groups of LinearTransform::part(r, ranks) with only its
// own rotation keys, the ranks' sums are added by all_reduce_sum, and each
// rank rescales once. Every rank returns the same residues, equal to
// whole.with_horner_giants(false).apply(...) on one device.
#pragma once

#include <cstddef>
#include <memory>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/runtime/device_group.hpp"
#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

class TermParallelTransform {
 public:
  // This rank's part, prepared for inputs in state `x` and linked to
  // `engine` with `keys` (borrowed: both must outlive this object; the keys
  // need part(rank, ranks).rotation_steps() only).
  TermParallelTransform(const LinearTransform& whole, const Engine& engine, const ValueState& x, const GaloisKeys& keys,
                        std::size_t rank, std::size_t ranks);
  TermParallelTransform(TermParallelTransform&&) noexcept;
  ~TermParallelTransform();

  const LinearTransform& part() const { return part_; }
  // Called by every rank with the same x: y = M x, rescaled.
  Ciphertext apply(runtime::Communicator& communicator, const Ciphertext& x) const;

 private:
  LinearTransform part_;
  std::string agreement_;  // what every rank must agree on: the whole transform, x's state, the ranks
  const Engine* engine_;
  std::unique_ptr<runtime::Executable> executable_;
  mutable bool agreed_ = false;
};

}  // namespace fhelium::circuits
