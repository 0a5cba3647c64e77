#include "narrow_operations.hpp"

#include <algorithm>

#include "cuda_check.hpp"

namespace fhelium::cuda::narrow {
namespace {

std::size_t limb_words(const Site& s, int limbs) { return static_cast<std::size_t>(limbs) * s.n; }

void copy(const Site& s, u32* dst, const u32* src, std::size_t words) {
  if (dst == src) return;
  check(cudaMemcpyAsync(dst, src, words * sizeof(u32), cudaMemcpyDeviceToDevice, s.stream), "cudaMemcpyAsync (narrow)");
}

}  // namespace

void to_ntt(const Site& s, int level, Poly out, Poly a) {
  copy(s, out.data, a.data, limb_words(s, out.components * out.limbs));
  s.tables.ntt().forward(out.data, out.components * out.limbs, s.stream, s.tables.level_primes(level), out.limbs);
}

void to_coefficient(const Site& s, int level, Poly out, Poly a) {
  copy(s, out.data, a.data, limb_words(s, out.components * out.limbs));
  s.tables.ntt().inverse(out.data, out.components * out.limbs, s.stream, s.tables.level_primes(level), out.limbs);
}

void rescale(const Site& s, int level, Poly out, Poly a) {
  const Tables& t = s.tables;
  const RescaleTables& r = t.rescale(level);
  const int dropped = static_cast<int>(r.dropped.size());
  // The dropped limbs of every component to the coefficient domain; the
  // conversion multiplies them by A.
  u32* lifted = s.work->lifted;
  if (r.dropped_contiguous) {
    copy_limbs(s.stream, s.n, {lifted, a.components, dropped}, a, r.dropped.front());
  } else {
    for (int c = 0; c < a.components; ++c) {
      for (int d = 0; d < dropped; ++d) {
        copy(s, lifted + limb_words(s, c * dropped + d), a.data + limb_words(s, c * a.limbs + r.dropped[d]), s.n);
      }
    }
  }
  t.ntt().inverse(lifted, a.components * dropped, s.stream, r.dropped_primes, dropped);
  u32* converted = s.work->converted;
  convert(s.stream, s.n, r.from_dropped, lifted, limb_words(s, dropped), converted, limb_words(s, out.limbs),
          a.components);
  // The converted limbs to the NTT domain, combined with a's on the way out:
  // out_c limb i = (a_c limb source_i x A_i - converted) D^-1.
  for (int first = 0; first < a.components; first += ForwardCombine::max_components) {
    const int components = std::min(ForwardCombine::max_components, a.components - first);
    ForwardCombine combine{};
    combine.limbs = out.limbs;
    for (int c = 0; c < components; ++c) {
      combine.out[c] = out.data + limb_words(s, (first + c) * out.limbs);
      combine.x[c] = a.data + limb_words(s, (first + c) * a.limbs);
    }
    for (int i = 0; i < out.limbs; ++i) combine.source[i] = r.source[static_cast<std::size_t>(i)];
    combine.scale_x = true;
    combine.x_factor = r.added;
    combine.w = r.dropped_inverse;
    t.ntt().forward_combined(converted + limb_words(s, first * out.limbs), components * out.limbs, s.stream,
                             t.level_primes(level - 1), out.limbs, combine);
  }
}

void mod_up(const Site& s, int level, const u32* d, u32 galois_element) {
  const Tables& t = s.tables;
  const KeySwitchTables& ks = t.key_switch(level);
  u32* coefficients = s.work->coefficients;
  copy(s, coefficients, d, limb_words(s, ks.q_limbs));
  t.ntt().inverse(coefficients, ks.q_limbs, s.stream, t.level_primes(level), ks.q_limbs);
  if (galois_element != 0) {
    galois_coefficients(s.stream, s.n, t.primes() + t.first(level), coefficients, s.work->rotated, ks.q_limbs,
                        galois_element);
    coefficients = s.work->rotated;
  }
  // Every digit's targets in one launch (or a few, for many digits), its own
  // limbs in one more, then one NTT over the targets of all of them.
  for (int first = 0; first < ks.digits; first += max_digits_per_launch) {
    DigitConversion conversion{};
    conversion.digits = std::min(max_digits_per_launch, ks.digits - first);
    conversion.slots = ks.slots;
    conversion.in = coefficients;
    conversion.out = s.work->extended + limb_words(s, first * ks.slots);
    for (int j = 0; j < conversion.digits; ++j) {
      const auto jj = static_cast<std::size_t>(first + j);
      conversion.converters[j] = ks.mod_up[jj];
      conversion.begin[j] = ks.digit_begin[jj];
    }
    convert_digits(s.stream, s.n, conversion);
  }
  // The digits' own limbs are d's, in the NTT domain (through X -> X^g).
  OwnLimbs own{d, s.work->extended, ks.digits, ks.slots, ks.max_own, {}, {}, galois_element};
  for (int j = 0; j < ks.digits; ++j) {
    own.begin[j] = ks.digit_begin[static_cast<std::size_t>(j)];
    own.end[j] = ks.digit_end[static_cast<std::size_t>(j)];
  }
  own_limbs(s.stream, s.n, own);
  const int extended_limbs = ks.digits * ks.slots;
  t.ntt().forward(s.work->extended, extended_limbs, s.stream, ks.extended_primes, extended_limbs);
}

void inner_product(const Site& s, int level, const u32* key, u32 galois_element) {
  const Tables& t = s.tables;
  const KeySwitchTables& ks = t.key_switch(level);
  InnerProduct p{};
  p.extended = s.work->extended;
  p.key = key;
  p.slot_primes = ks.slot_primes;
  p.primes = t.primes();
  p.accumulators = s.work->accumulators;
  p.digits = ks.digits;
  p.first_digit = ks.first_digit;
  p.slots = ks.slots;
  p.key_limbs = t.key_limbs();
  for (int j = 0; j < ks.digits; ++j) {
    p.digit_begin[j] = ks.digit_begin[static_cast<std::size_t>(j)];
    p.digit_end[j] = ks.digit_end[static_cast<std::size_t>(j)];
  }
  p.galois_element = galois_element;
  narrow::inner_product(s.stream, s.n, p);
}

void mod_down(const Site& s, int level, u32* out0, const u32* add0, u32 add0_galois, u32* out1, const u32* add1) {
  const Tables& t = s.tables;
  const KeySwitchTables& ks = t.key_switch(level);
  const int specials = ks.slots - ks.q_limbs;
  const std::size_t accumulator = limb_words(s, ks.slots);
  u32* acc = s.work->accumulators;
  // Both accumulators' P limbs in one launch (the second's Q limbs between
  // them are skipped).
  t.ntt().inverse(acc + limb_words(s, ks.q_limbs), ks.slots + specials, s.stream, ks.accumulator_primes,
                  ks.slots + specials);
  u32* converted = s.work->converted;
  const std::size_t q_words = limb_words(s, ks.q_limbs);
  convert(s.stream, s.n, ks.mod_down, acc + q_words, accumulator, converted, q_words, 2);
  // Their NTT, combined on the way out: out_c = (acc_c - converted_c) P^-1 + add_c.
  ForwardCombine combine{};
  combine.limbs = ks.q_limbs;
  combine.out[0] = out0;
  combine.out[1] = out1;
  combine.x[0] = acc;
  combine.x[1] = acc + accumulator;
  combine.add[0] = add0;
  combine.add[1] = add1;
  combine.add_galois[0] = add0_galois;
  for (int i = 0; i < ks.q_limbs; ++i) combine.source[i] = i;
  combine.w = ks.p_inverse;
  t.ntt().forward_combined(converted, 2 * ks.q_limbs, s.stream, t.level_primes(level), ks.q_limbs, combine);
}

void mod_down_rescale(const Site& s, int level, Poly out, Poly add) {
  const Tables& t = s.tables;
  const KeySwitchTables& ks = t.key_switch(level);
  const RescaleTables& r = t.rescale(level);
  const int first_dropped = r.dropped.front();
  const std::size_t accumulator = limb_words(s, ks.slots);
  u32* acc = s.work->accumulators;
  u32* dropped = acc + limb_words(s, first_dropped);
  const u32* p_limbs = acc + limb_words(s, ks.q_limbs);
  // The dropped limbs: acc P^-1 + add, then with the P limbs to the
  // coefficient domain in one launch, less [acc_P]_d P^-1: ModDown's output there.
  fold_dropped(s.stream, s.n,
               {acc, accumulator, add.data, limb_words(s, add.limbs), t.primes() + t.first(level), first_dropped,
                static_cast<int>(r.dropped.size()), ks.p_inverse});
  const int inverse_limbs = 2 * ks.slots - r.fused_inverse_begin;
  t.ntt().inverse(acc + limb_words(s, r.fused_inverse_begin), inverse_limbs, s.stream,
                  r.fused_inverse_primes + r.fused_inverse_begin, inverse_limbs);
  convert(s.stream, s.n, r.p_to_dropped, p_limbs, accumulator, dropped, accumulator, 2, true);
  // y_t = [acc_P]_t P^-1 A_t + the rescale's conversion of the dropped limbs.
  u32* converted = s.work->converted;
  const std::size_t out_words = limb_words(s, out.limbs);
  convert(s.stream, s.n, r.p_to_out, p_limbs, accumulator, converted, out_words, 2);
  convert(s.stream, s.n, r.from_dropped, dropped, accumulator, converted, out_words, 2, true);
  // Their NTT, combined on the way out: out_c = (acc_c P^-1 A - y) D^-1 + add_c A D^-1
  // (acc_c and add_c at limb source_i).
  ForwardCombine combine{};
  combine.limbs = out.limbs;
  for (int c = 0; c < 2; ++c) {
    combine.out[c] = out.data + c * out_words;
    combine.x[c] = acc + c * accumulator;
    combine.add[c] = add.data + c * limb_words(s, add.limbs);
  }
  for (int i = 0; i < out.limbs; ++i) combine.source[i] = r.source[static_cast<std::size_t>(i)];
  combine.scale_x = true;
  combine.x_factor = r.p_inverse_added;
  combine.w = r.dropped_inverse;
  combine.add_at_source = true;
  combine.add_factor = r.added_over_dropped;
  t.ntt().forward_combined(converted, 2 * out.limbs, s.stream, t.level_primes(level - 1), out.limbs, combine);
}

}  // namespace fhelium::cuda::narrow
