#include "narrow_tables.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "fhelium/backend/level_zero.hpp"
#include "fhelium/backend/modarith.hpp"
#include "fhelium/backend/ntt32.hpp"
#include "fhelium/context.hpp"
#include "fhelium/error.hpp"

namespace fhelium::cuda::narrow {
namespace {

// Host image of the tables: arrays appended 8-byte aligned, offsets recorded.
class Blob {
 public:
  template <class T>
  std::size_t add(const std::vector<T>& values) {
    const std::size_t at = (bytes_.size() + 7) / 8 * 8;
    bytes_.resize(at + values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(bytes_.data() + at, values.data(), values.size() * sizeof(T));
    return at;
  }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

Prime prime_of(u64 q) {
  const NarrowModulus m(q);
  return {m.value, m.two32, m.two32_shoup, m.one_shoup};
}

std::vector<Prime> primes_of(const std::vector<Modulus>& moduli) {
  std::vector<Prime> out;
  for (const Modulus& m : moduli) out.push_back(prime_of(m.value));
  return out;
}

struct ConverterOffsets {
  int from_count, to_count;
  std::size_t from, to, hat_inverse, hat_inverse_shoup, inverse_double, hat_mod_to, overflow_mod_to;
  u32 fold_after;
};

// ConverterView::fold_after: a target's sum takes products y_i [A/a_i]_{b_j}
// below (a_i - 1)(b - 1), b the largest target, until the next would pass
// 2^64 - 1; a fold leaves at most (2^32 - 1) b. At the 2^16 _int32 preset
// a digit of 10 primes folds once, instead of two reductions to [0, b).
u32 fold_schedule(const std::vector<Modulus>& from, const std::vector<Modulus>& to) {
  u64 b = 0;
  for (const Modulus& m : to) b = std::max(b, m.value);
  const u64 folded = u64{0xffffffffu} * b;  // b < 2^31: every bound fits in 64 bits
  u32 fold_after = 0;
  u64 bound = 0;
  for (std::size_t i = 0; i < from.size(); ++i) {
    const u64 product = (from[i].value - 1) * (b - 1);
    if (product > ~u64{0} - bound) {
      fold_after |= 1u << (i - 1);
      bound = folded;
    }
    bound += product;
  }
  return fold_after;
}

// `scale[i]` multiplies the scaled residues of prime i (converts x times a
// constant; empty: 1); `out_scale[j]` multiplies target j's residues.
ConverterOffsets add_converter(Blob& blob, const BasisConverter& c, const std::vector<u64>& scale = {},
                               const std::vector<u64>& out_scale = {}) {
  const std::size_t na = c.from().size();
  if (na > static_cast<std::size_t>(max_from_primes)) {
    throw BackendError("cuda: a basis conversion from " + std::to_string(na) + " primes, expected at most " +
                       std::to_string(max_from_primes) + " in 32-bit words");
  }
  if ((!scale.empty() && scale.size() != na) || (!out_scale.empty() && out_scale.size() != c.to().size())) {
    throw BackendError("cuda: a basis conversion's scales have " + std::to_string(scale.size()) + " and " +
                       std::to_string(out_scale.size()) + " entries, expected " + std::to_string(na) + " and " +
                       std::to_string(c.to().size()) + " (or none)");
  }
  std::vector<u32> hat_inverse, hat_inverse_shoup, hat_mod_to, overflow;
  for (std::size_t i = 0; i < na; ++i) {
    const Modulus& a = c.from()[i];
    const u64 w = scale.empty() ? c.hat_inverse()[i] : mul_mod(c.hat_inverse()[i], scale[i], a);
    hat_inverse.push_back(static_cast<u32>(w));
    hat_inverse_shoup.push_back(shoup(static_cast<u32>(w), static_cast<u32>(a.value)));
  }
  const auto target_scaled = [&](const std::vector<u64>& table, std::vector<u32>& out) {
    const std::size_t row = table.size() / c.to().size();
    for (std::size_t at = 0; at < table.size(); ++at) {
      const std::size_t j = at / row;
      out.push_back(static_cast<u32>(out_scale.empty() ? table[at] : mul_mod(table[at], out_scale[j], c.to()[j])));
    }
  };
  target_scaled(c.hat_mod_to(), hat_mod_to);
  target_scaled(c.overflow_mod_to(), overflow);
  ConverterOffsets o{};
  o.from_count = static_cast<int>(na);
  o.to_count = static_cast<int>(c.to().size());
  o.from = blob.add(primes_of(c.from()));
  o.to = blob.add(primes_of(c.to()));
  o.hat_inverse = blob.add(hat_inverse);
  o.hat_inverse_shoup = blob.add(hat_inverse_shoup);
  o.inverse_double = blob.add(c.inverse_as_double());
  o.hat_mod_to = blob.add(hat_mod_to);
  o.overflow_mod_to = blob.add(overflow);
  o.fold_after = fold_schedule(c.from(), c.to());
  return o;
}

template <class T>
const T* at(const std::byte* base, std::size_t offset) {
  return reinterpret_cast<const T*>(base + offset);
}

ConverterView view_of(const ConverterOffsets& o, const std::byte* base) {
  return {o.from_count,
          o.to_count,
          at<Prime>(base, o.from),
          at<Prime>(base, o.to),
          at<u32>(base, o.hat_inverse),
          at<u32>(base, o.hat_inverse_shoup),
          at<double>(base, o.inverse_double),
          at<u32>(base, o.hat_mod_to),
          at<u32>(base, o.overflow_mod_to),
          o.fold_after};
}

// Level 0's primes and (q_0 .. q_(j-1))^-1 mod q_j, as Backend::mod_raise
// lifts them; Q_0 < 2^63.
LevelZero level_zero_of(const Context& c) {
  LevelZero zero{};
  zero.count = c.level_basis(0).count;
  if (zero.count > max_level_zero_primes) {
    throw BackendError("cuda prepare: level 0 has " + std::to_string(zero.count) + " primes, expected at most " +
                       std::to_string(max_level_zero_primes) + " in 32-bit words");
  }
  const LevelZeroGarner garner = level_zero_garner(c);
  if (!garner.modulus) return zero;  // modulus 0: mod_raise refuses
  for (int j = 0; j < zero.count; ++j) {
    zero.q[j] = static_cast<u32>(garner.primes[static_cast<std::size_t>(j)]);
    zero.garner[j] = static_cast<u32>(garner.inverses[static_cast<std::size_t>(j)]);
  }
  zero.modulus = *garner.modulus;
  return zero;
}

}  // namespace

LimbConstants limb_constants(const Context& c, int level, std::span<const u64> w) {
  if (w.size() > static_cast<std::size_t>(max_limbs)) {
    throw BackendError("cuda: " + std::to_string(w.size()) + " limbs, expected at most " + std::to_string(max_limbs) +
                       " in 32-bit words");
  }
  LimbConstants out{};
  for (std::size_t i = 0; i < w.size(); ++i) {
    const auto q = static_cast<u32>(c.level_modulus(level, static_cast<int>(i)).value);
    out.w[i] = static_cast<u32>(w[i]);
    out.w_shoup[i] = shoup(out.w[i], q);
  }
  return out;
}

Tables::Tables(const Context& c, const std::shared_ptr<DeviceRuntime>& runtime)
    : key_limbs_(c.key_limbs()), workspace_pool_(runtime, c.ring_degree()) {
  const std::size_t n = c.ring_degree();
  const int key_limbs = c.key_limbs();
  const int q_count = c.q_count();
  const int max_level = c.max_level();
  if (key_limbs > max_limbs) {
    throw BackendError("cuda prepare: " + std::to_string(key_limbs) + " key limbs, expected at most " +
                       std::to_string(max_limbs) + " in 32-bit words");
  }
  std::vector<NttTable32> ntt_tables;
  for (int limb = 0; limb < key_limbs; ++limb) ntt_tables.emplace_back(c.ntt(limb));
  ntt_ = std::make_unique<DeviceNtt32>(ntt_tables);
  level_zero_ = level_zero_of(c);

  Blob blob;
  std::vector<Prime> primes;
  for (int limb = 0; limb < key_limbs; ++limb) primes.push_back(prime_of(c.key_modulus(limb).value));
  const std::size_t primes_at = blob.add(primes);

  struct LevelOffsets {
    std::size_t level_primes, slot_primes, extended_primes, accumulator_primes, dropped_primes = 0;
    std::vector<ConverterOffsets> mod_up;
    ConverterOffsets mod_down{};
    std::optional<ConverterOffsets> from_dropped;
    std::size_t fused_inverse_primes = 0;
    ConverterOffsets p_to_dropped{}, p_to_out{};
  };
  std::vector<LevelOffsets> offsets;
  std::size_t max_dropped = 0;
  for (int level = 0; level <= max_level; ++level) {
    const LevelBasis& basis = c.level_basis(level);
    const KeySwitchLevel& ks = c.key_switch(level);
    const int slots = basis.count + c.special_count();
    LevelOffsets lo{};
    first_.push_back(basis.first);
    std::vector<int> level_primes, slot_primes, extended_primes, accumulator_primes;
    for (int i = 0; i < basis.count; ++i) level_primes.push_back(c.key_limb(level, i));
    for (int s = 0; s < slots; ++s) slot_primes.push_back(c.key_limb(level, s));
    for (int k = 0; k < c.special_count(); ++k) accumulator_primes.push_back(q_count + k);
    accumulator_primes.insert(accumulator_primes.end(), static_cast<std::size_t>(basis.count), -1);
    for (int k = 0; k < c.special_count(); ++k) accumulator_primes.push_back(q_count + k);
    lo.level_primes = blob.add(level_primes);
    lo.slot_primes = blob.add(slot_primes);
    lo.accumulator_primes = blob.add(accumulator_primes);

    KeySwitchTables t;
    t.digits = ks.digits;
    t.first_digit = ks.first_digit;
    t.q_limbs = basis.count;
    t.slots = slots;
    for (int j = 0; j < ks.digits; ++j) {
      const auto [begin, end] = c.digit_limbs(level, j);
      t.digit_begin.push_back(begin);
      t.digit_end.push_back(end);
      t.max_own = std::max(t.max_own, end - begin);
      // Digit j's targets (the limbs outside [begin, end)), then its own limbs.
      for (int s = 0; s < slots; ++s) {
        if (s < begin || s >= end) extended_primes.push_back(c.key_limb(level, s));
      }
      extended_primes.insert(extended_primes.end(), static_cast<std::size_t>(end - begin), -1);
      lo.mod_up.push_back(add_converter(blob, ks.mod_up[static_cast<std::size_t>(j)]));
    }
    lo.extended_primes = blob.add(extended_primes);
    lo.mod_down = add_converter(blob, ks.mod_down);
    t.p_inverse = limb_constants(c, level, ks.p_inverse);
    key_switch_.push_back(std::move(t));

    RescaleTables r;
    const RescaleLevel& rs = c.rescale(level);
    if (level > 0 && rs.from_dropped) {
      r.dropped = rs.dropped;
      r.dropped_contiguous = true;
      for (std::size_t d = 1; d < r.dropped.size(); ++d) {
        r.dropped_contiguous = r.dropped_contiguous && r.dropped[d] == r.dropped[0] + static_cast<int>(d);
      }
      std::vector<int> dropped_primes;
      for (int limb : rs.dropped) dropped_primes.push_back(c.key_limb(level, limb));
      lo.dropped_primes = blob.add(dropped_primes);
      lo.from_dropped = add_converter(blob, *rs.from_dropped, rs.added_mod_dropped);
      for (std::size_t i = 0; i < rs.source.size(); ++i) r.source[i] = rs.source[i];
      r.added = limb_constants(c, level - 1, rs.added_mod_out);
      r.dropped_inverse = limb_constants(c, level - 1, rs.dropped_inverse);
      max_dropped = std::max(max_dropped, rs.dropped.size());
      if (r.dropped_contiguous) {
        // multiply_relinearize_rescale's ModDown takes the rescale
        // (mod_down_rescale). On the dropped limbs ModDown's output, in the
        // coefficient domain, is that of acc P^-1 + add less [acc_P]_d P^-1;
        // on the kept ones the rescale's x A becomes acc P^-1 A + add A, and
        // [acc_P]_t P^-1 A joins the rescale's conversion before their one
        // forward transform.
        r.fuses_key_switch = true;
        std::vector<int> inverse_primes(2 * static_cast<std::size_t>(slots), -1);
        for (int s = 0; s < slots; ++s) {
          const bool dropped = s >= r.dropped.front() && s <= r.dropped.back();
          if (!dropped && s < basis.count) continue;
          inverse_primes[static_cast<std::size_t>(s)] = c.key_limb(level, s);
          inverse_primes[static_cast<std::size_t>(slots + s)] = c.key_limb(level, s);
        }
        r.fused_inverse_begin = r.dropped.front();
        lo.fused_inverse_primes = blob.add(inverse_primes);
        const std::vector<Modulus>& dropped_moduli = rs.from_dropped->from();
        const std::vector<Modulus>& out_moduli = rs.from_dropped->to();
        std::vector<u64> minus_p_inverse_dropped, p_inverse_added, added_over_dropped;
        for (std::size_t d = 0; d < rs.dropped.size(); ++d) {
          const u64 inverse = ks.p_inverse[static_cast<std::size_t>(rs.dropped[d])];
          minus_p_inverse_dropped.push_back(inverse == 0 ? 0 : dropped_moduli[d].value - inverse);
        }
        for (std::size_t i = 0; i < out_moduli.size(); ++i) {
          const Modulus& prime = out_moduli[i];
          const int source = rs.source[i];
          p_inverse_added.push_back(
              source < 0 ? 0 : mul_mod(ks.p_inverse[static_cast<std::size_t>(source)], rs.added_mod_out[i], prime));
          added_over_dropped.push_back(mul_mod(rs.added_mod_out[i], rs.dropped_inverse[i], prime));
        }
        const std::vector<Modulus>& p_moduli = ks.mod_down.from();
        lo.p_to_dropped = add_converter(blob, BasisConverter(p_moduli, dropped_moduli), {}, minus_p_inverse_dropped);
        lo.p_to_out = add_converter(blob, BasisConverter(p_moduli, out_moduli), {}, p_inverse_added);
        r.p_inverse_added = limb_constants(c, level - 1, p_inverse_added);
        r.added_over_dropped = limb_constants(c, level - 1, added_over_dropped);
      }
    }
    rescale_.push_back(std::move(r));
    offsets.push_back(std::move(lo));
  }

  const std::vector<std::byte>& bytes = blob.bytes();
  table_bytes_ = bytes.size() + ntt_tables.size() * 4 * n * sizeof(u32);
  tables_ = DeviceAllocation(runtime, bytes.size());
  runtime->upload(tables_.words(), bytes.data(), bytes.size());
  const auto* base = reinterpret_cast<const std::byte*>(tables_.words());
  primes_ = at<Prime>(base, primes_at);
  for (int level = 0; level <= max_level; ++level) {
    const LevelOffsets& lo = offsets[static_cast<std::size_t>(level)];
    level_primes_.push_back(at<int>(base, lo.level_primes));
    KeySwitchTables& t = key_switch_[static_cast<std::size_t>(level)];
    t.slot_primes = at<int>(base, lo.slot_primes);
    t.extended_primes = at<int>(base, lo.extended_primes);
    t.accumulator_primes = at<int>(base, lo.accumulator_primes);
    for (const ConverterOffsets& mod_up : lo.mod_up) t.mod_up.push_back(view_of(mod_up, base));
    t.mod_down = view_of(lo.mod_down, base);
    if (lo.from_dropped) {
      RescaleTables& r = rescale_[static_cast<std::size_t>(level)];
      r.dropped_primes = at<int>(base, lo.dropped_primes);
      r.from_dropped = view_of(*lo.from_dropped, base);
      if (r.fuses_key_switch) {
        r.fused_inverse_primes = at<int>(base, lo.fused_inverse_primes);
        r.p_to_dropped = view_of(lo.p_to_dropped, base);
        r.p_to_out = view_of(lo.p_to_out, base);
      }
    }
  }

  max_dropped_ = std::max<std::size_t>(max_dropped, 1);
  add_workspace(c);  // lane 0
}

void Tables::add_workspace(const Context& c) {
  const auto q = static_cast<std::size_t>(c.q_count());
  const auto digits = static_cast<std::size_t>(c.key_digits());
  const auto slots = static_cast<std::size_t>(key_limbs_);
  WorkspacePool::Batch buffers = workspace_pool_.batch();
  auto limbs = [&](std::size_t count) { return buffers.limbs<u32>(count); };
  const Workspace w{limbs(q), limbs(q), limbs(digits * slots), limbs(2 * slots), limbs(3 * q), limbs(3 * max_dropped_)};
  workspace_pool_.keep(std::move(buffers));
  workspaces_.push_back(w);
}

void Tables::provide_workspaces(const Context& c) {
  while (static_cast<int>(workspaces_.size()) < DeviceRuntime::key_switch_lanes) add_workspace(c);
}

}  // namespace fhelium::cuda::narrow
