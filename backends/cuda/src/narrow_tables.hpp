// The CUDA backend's tables for a context of the 32-bit word family (primes
// below 2^31, levels of several primes that are windows of the chain): the
// 32-bit NTT, every level's key-switching and rescale constants, and the
// workspace, uploaded or allocated once in prepare() (a capture lane's
// workspace when a capture first begins).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cuda_context.hpp"
#include "narrow_kernels.hpp"
#include "ntt32.hpp"

namespace fhelium {
class Context;
}

namespace fhelium::cuda::narrow {

// Hybrid key switching at one level (KeySwitchLevel in 32-bit words).
struct KeySwitchTables {
  int digits = 0;
  int first_digit = 0;
  int q_limbs = 0;
  int slots = 0;                            // q_limbs + the P primes
  std::vector<int> digit_begin, digit_end;  // the level's limbs of digit j
  int max_own = 0;                          // the most limbs a digit owns
  std::vector<ConverterView> mod_up;        // digit j -> its targets
  ConverterView mod_down{};                 // P -> Q_l
  const int* slot_primes = nullptr;         // key limb of each slot (device)
  // The extended digits' NTT map (device, digits x slots): a target's key
  // limb, -1 for the digit's own limbs (already in the NTT domain).
  const int* extended_primes = nullptr;
  // The NTT map from the first accumulator's P limbs to the second's (device,
  // slots + P): the P primes' key limbs, -1 for the second's Q limbs.
  const int* accumulator_primes = nullptr;
  LimbConstants p_inverse{};                // [P^-1]_{q_i}
};

// Rescale from level l to l - 1 (RescaleLevel in 32-bit words).
struct RescaleTables {
  std::vector<int> dropped;             // limbs of level l divided out
  bool dropped_contiguous = false;      // dropped[d] = dropped[0] + d (copied out in one launch)
  const int* dropped_primes = nullptr;  // their key limbs (device)
  ConverterView from_dropped{};         // its hat_inverse times [A]_d: converts x A
  int source[max_limbs] = {};           // limb of level l with limb i's prime, or -1
  LimbConstants added{};                // [A]_{t}
  LimbConstants dropped_inverse{};      // [D^-1]_{t}

  // multiply_relinearize_rescale as one key switch whose ModDown takes the
  // rescale (mod_down_rescale; where the dropped limbs are contiguous).
  bool fuses_key_switch = false;
  // Both accumulators' dropped and P limbs (device map over 2 x slots limbs:
  // their key limbs, -1 for the others), from limb fused_inverse_begin on.
  const int* fused_inverse_primes = nullptr;
  int fused_inverse_begin = 0;
  ConverterView p_to_dropped{};        // P -> the dropped primes, times -P^-1
  ConverterView p_to_out{};            // P -> level l - 1's primes, times P^-1 A
  LimbConstants p_inverse_added{};     // [P^-1 A]_t (0 for an added prime)
  LimbConstants added_over_dropped{};  // [A D^-1]_t
};

// w_i and Shoup's constants modulo the primes of `level`'s limbs (at most max_limbs).
LimbConstants limb_constants(const Context& c, int level, std::span<const u64> w);

class Tables {
 public:
  Tables(const Context& c, const std::shared_ptr<DeviceRuntime>& runtime);

  const DeviceNtt32& ntt() const { return *ntt_; }
  int key_limbs() const { return key_limbs_; }
  // By key limb.
  const Prime* primes() const { return primes_; }
  // The first key limb of a level, and the key limbs of its Q limbs (device).
  int first(int level) const { return first_.at(static_cast<std::size_t>(level)); }
  const int* level_primes(int level) const { return level_primes_.at(static_cast<std::size_t>(level)); }
  const KeySwitchTables& key_switch(int level) const { return key_switch_.at(static_cast<std::size_t>(level)); }
  const RescaleTables& rescale(int level) const { return rescale_.at(static_cast<std::size_t>(level)); }
  // Level 0's primes and Garner constants (ModRaise).
  const LevelZero& level_zero() const { return level_zero_; }

  // Workspace for the top level (lower levels use a prefix of each part),
  // one per key-switching lane (CudaContext::work): lane 0's built with the
  // tables, the others' by provide_workspaces when a capture begins.
  struct Workspace {
    u32* coefficients;  // Q limbs
    u32* rotated;       // Q limbs
    u32* extended;      // digits x key limbs
    u32* accumulators;  // 2 x key limbs
    u32* converted;     // 3 x Q limbs
    u32* lifted;        // 3 x the most limbs a rescale drops
  };
  const Workspace& workspace(int lane) const { return workspaces_.at(static_cast<std::size_t>(lane)); }

  std::size_t table_bytes() const { return table_bytes_; }
  std::size_t workspace_bytes() const { return workspace_pool_.bytes(); }
  // Every key-switching lane's workspace (CudaContext::provide_capture_lanes;
  // `c` is the context these tables were built for).
  void provide_workspaces(const Context& c);

 private:
  // One more lane's workspace.
  void add_workspace(const Context& c);

  int key_limbs_;
  std::size_t max_dropped_ = 1;  // the most limbs a rescale drops (at least 1)
  std::unique_ptr<DeviceNtt32> ntt_;
  DeviceAllocation tables_;
  const Prime* primes_ = nullptr;
  std::vector<int> first_;
  std::vector<const int*> level_primes_;
  std::vector<KeySwitchTables> key_switch_;
  std::vector<RescaleTables> rescale_;
  LevelZero level_zero_{};
  WorkspacePool workspace_pool_;
  std::vector<Workspace> workspaces_;
  std::size_t table_bytes_ = 0;
};

}  // namespace fhelium::cuda::narrow
