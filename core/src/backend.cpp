// Defaults of the optional Backend capabilities, for synchronous backends.
#include "fhelium/backend/backend.hpp"

#include <algorithm>
#include <vector>

#include "fhelium/backend/level_zero.hpp"
#include "fhelium/backend/limb_kernels.hpp"
#include "fhelium/backend/residue_transfer.hpp"
#include "fhelium/context.hpp"
#include "fhelium/error.hpp"

namespace fhelium {

std::shared_ptr<Stream> Backend::create_stream() { return std::make_shared<Stream>(); }
std::shared_ptr<Event> Backend::create_event() { return std::make_shared<Event>(); }

void Backend::record_event(Event& event, Stream*) {
  synchronize();
  if (auto* clock = dynamic_cast<HostClockEvent*>(&event)) clock->recorded_at = std::chrono::steady_clock::now();
}
void Backend::wait_event(Stream*, const Event&) {}
void Backend::synchronize_event(const Event&) { synchronize(); }

std::shared_ptr<Event> Backend::create_timing_event() { return std::make_shared<HostClockEvent>(); }

double Backend::elapsed_seconds(const Event& start, const Event& end) {
  const auto recorded = [this](const Event& event, const char* which) {
    const auto* clock = dynamic_cast<const HostClockEvent*>(&event);
    if (!clock) {
      throw InvalidArgumentError(std::string("elapsed_seconds: the ") + which + " event was not created by " + name() +
                                 "'s create_timing_event");
    }
    if (!clock->recorded_at) {
      throw StateError(std::string("elapsed_seconds: the ") + which + " event has not been recorded (record_event)");
    }
    return *clock->recorded_at;
  };
  return std::chrono::duration<double>(recorded(end, "end") - recorded(start, "start")).count();
}

void Backend::copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream*) {
  std::vector<unsigned char> staging(bytes);
  download(src, staging.data(), bytes);
  upload(dst, staging.data(), bytes);
}

void Backend::upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) {
  std::vector<std::byte> host(bytes);
  for (std::size_t offset = 0; offset < bytes; offset += upload_chunk_bytes) {
    fill(std::span(host).subspan(offset, std::min(upload_chunk_bytes, bytes - offset)), offset);
  }
  upload(dst, host.data(), bytes);
}

void Backend::begin_capture() {
  throw BackendError("backend '" + name() + "' cannot capture operations (supports_capture() is false)");
}

void Backend::multiply_relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                   const KeyArg& key) {
  check_product_operands(c.context(), "multiply_relinearize", out, a, b, false);
  const std::size_t words = 3 * static_cast<std::size_t>(a.limbs) * c.context().ring_degree();
  const std::shared_ptr<Buffer> product = allocate(words * stored_word_bytes(c.context().word_size()));
  const PolyArg tensor{product.get(), 3, a.limbs};
  multiply(c, tensor, a, b);
  relinearize(c, out, tensor, key);
}

void Backend::multiply_relinearize_rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                                           const PolyArg& b, const KeyArg& key) {
  check_product_operands(c.context(), "multiply_relinearize_rescale", out, a, b, true);
  const std::size_t words = 2 * static_cast<std::size_t>(a.limbs) * c.context().ring_degree();
  const std::shared_ptr<Buffer> product = allocate(words * stored_word_bytes(c.context().word_size()));
  const PolyArg relinearized{product.get(), 2, a.limbs};
  multiply_relinearize(c, relinearized, a, b, key);
  rescale(c, out, relinearized);
}

void Backend::sum_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                           std::span<const PolyArg> p) {
  check_sum_products(out, a, p);
  if (p.empty()) {
    if (a.size() == 1) return drop_limbs(c, out, a[0]);  // a copy
    add(c, out, a[0], a[1]);
    for (std::size_t i = 2; i < a.size(); ++i) add(c, out, out, a[i]);
    return;
  }
  multiply_plain(c, out, a[0], p[0]);
  if (a.size() == 1) return;
  const std::size_t words = static_cast<std::size_t>(out.components) * out.limbs * c.context().ring_degree();
  const std::shared_ptr<Buffer> product = allocate(words * stored_word_bytes(c.context().word_size()));
  const PolyArg term{product.get(), out.components, out.limbs};
  for (std::size_t i = 1; i < a.size(); ++i) {
    multiply_plain(c, term, a[i], p[i]);
    add(c, out, out, term);
  }
}

void Backend::sum_constant_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                                    std::span<const std::uint64_t> r) {
  check_sum_constant_products(out, a, r);
  const auto limbs = static_cast<std::size_t>(out.limbs);
  if (a.size() == 1) return multiply_constant(c, out, a[0], r.first(limbs));
  // The calls of separate products and their sum: one product per term, then one pass.
  const std::size_t words = static_cast<std::size_t>(out.components) * limbs * c.context().ring_degree();
  std::vector<std::shared_ptr<Buffer>> products;
  std::vector<PolyArg> terms;
  for (std::size_t i = 0; i < a.size(); ++i) {
    products.push_back(allocate(words * stored_word_bytes(c.context().word_size())));
    terms.push_back({products.back().get(), out.components, out.limbs});
    multiply_constant(c, terms.back(), a[i], r.subspan(i * limbs, limbs));
  }
  sum_products(c, out, terms, {});
}

void Backend::sum_product_groups(const BackendContext& c, std::span<const PolyArg> outs, std::span<const PolyArg> a,
                                 std::span<const PolyArg> p, std::span<const std::size_t> ends) {
  check_sum_product_groups(outs, a, p, ends);
  std::size_t first = 0;
  for (std::size_t g = 0; g < outs.size(); ++g) {
    sum_products(c, outs[g], a.subspan(first, ends[g] - first), p.subspan(first, ends[g] - first));
    first = ends[g];
  }
}

void Backend::rotate_sum(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                         std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) {
  check_rotate_sum(out, a, galois_elements, keys);
  throw BackendError("backend '" + name() + "' has no rotate_sum (supports_rotate_sum() is false)");
}

void check_rotate_sum(const PolyArg& out, std::span<const PolyArg> a, std::span<const std::uint32_t> galois_elements,
                      std::span<const KeyArg> keys) {
  const auto refuse = [](const std::string& what) { throw InvalidArgumentError("rotate_sum: " + what); };
  if (a.empty()) refuse("no terms, expected at least one");
  if (galois_elements.size() != a.size() || keys.size() != a.size()) {
    refuse(std::to_string(a.size()) + " terms, " + std::to_string(galois_elements.size()) + " Galois elements and " +
           std::to_string(keys.size()) + " keys, expected one element and one key per term");
  }
  if (out.components != 2) refuse("the output has " + std::to_string(out.components) + " components, expected 2");
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].components != 2 || a[i].limbs != out.limbs) {
      refuse("term " + std::to_string(i) + " has " + std::to_string(a[i].components) + " components of " +
             std::to_string(a[i].limbs) + " limbs, expected 2 of the output's " + std::to_string(out.limbs));
    }
    if (a[i].buffer == out.buffer) refuse("term " + std::to_string(i) + " is the output, expected another buffer");
  }
}

namespace {
// A sum's term i has out's components and limbs and another buffer.
template <class Refuse>
void check_sum_term(const Refuse& refuse, const PolyArg& out, const PolyArg& term, std::size_t i) {
  if (term.components != out.components || term.limbs != out.limbs) {
    refuse("term " + std::to_string(i) + " has " + std::to_string(term.components) + " components of " +
           std::to_string(term.limbs) + " limbs, expected the output's " + std::to_string(out.components) + " of " +
           std::to_string(out.limbs));
  }
  if (term.buffer == out.buffer) refuse("term " + std::to_string(i) + " is the output, expected another buffer");
}
}  // namespace

void check_sum_constant_products(const PolyArg& out, std::span<const PolyArg> a, std::span<const std::uint64_t> r) {
  const auto refuse = [](const std::string& what) { throw InvalidArgumentError("sum_constant_products: " + what); };
  if (a.empty()) refuse("no terms, expected at least one");
  const std::size_t expected = a.size() * static_cast<std::size_t>(out.limbs);
  if (r.size() != expected) {
    refuse(std::to_string(r.size()) + " residues for " + std::to_string(a.size()) + " terms of " +
           std::to_string(out.limbs) + " limbs, expected " + std::to_string(expected) + " (one per term and limb)");
  }
  for (std::size_t i = 0; i < a.size(); ++i) check_sum_term(refuse, out, a[i], i);
}

void check_sum_product_groups(std::span<const PolyArg> outs, std::span<const PolyArg> a, std::span<const PolyArg> p,
                              std::span<const std::size_t> ends) {
  const auto refuse = [](const std::string& what) { throw InvalidArgumentError("sum_product_groups: " + what); };
  if (outs.empty()) refuse("no groups, expected at least one");
  if (ends.size() != outs.size()) {
    refuse(std::to_string(ends.size()) + " group ends for " + std::to_string(outs.size()) +
           " outputs, expected one per output");
  }
  if (p.size() != a.size()) {
    refuse(std::to_string(a.size()) + " ciphertexts and " + std::to_string(p.size()) +
           " plaintexts, expected one plaintext per ciphertext");
  }
  std::size_t first = 0;
  for (std::size_t g = 0; g < outs.size(); ++g) {
    if (ends[g] <= first || ends[g] > a.size()) {
      refuse("group " + std::to_string(g) + " ends at term " + std::to_string(ends[g]) + ", expected a term in (" +
             std::to_string(first) + ", " + std::to_string(a.size()) + "] (every group has a term)");
    }
    if (outs[g].components != outs[0].components || outs[g].limbs != outs[0].limbs) {
      refuse("output " + std::to_string(g) + " has " + std::to_string(outs[g].components) + " components of " +
             std::to_string(outs[g].limbs) + " limbs, expected the first output's " +
             std::to_string(outs[0].components) + " of " + std::to_string(outs[0].limbs));
    }
    try {
      check_sum_products(outs[g], a.subspan(first, ends[g] - first), p.subspan(first, ends[g] - first));
    } catch (const InvalidArgumentError& e) {
      refuse("group " + std::to_string(g) + " (its term 0 is term " + std::to_string(first) + "): " + e.what());
    }
    for (std::size_t t = 0; t < a.size(); ++t) {
      if (a[t].buffer == outs[g].buffer || p[t].buffer == outs[g].buffer) {
        refuse("output " + std::to_string(g) + " is an operand of term " + std::to_string(t) +
               ", expected another buffer");
      }
    }
    for (std::size_t h = 0; h < g; ++h) {
      if (outs[h].buffer == outs[g].buffer) {
        refuse("outputs " + std::to_string(h) + " and " + std::to_string(g) + " share a buffer, expected their own");
      }
    }
    first = ends[g];
  }
  if (ends.back() != a.size()) {
    refuse("the last group ends at term " + std::to_string(ends.back()) + ", expected the term count " +
           std::to_string(a.size()));
  }
}

void check_product_operands(const Context& context, const char* operation, const PolyArg& out, const PolyArg& a,
                            const PolyArg& b, bool rescaled) {
  const auto refuse = [&](const std::string& what) {
    throw InvalidArgumentError(std::string(operation) + ": " + what);
  };
  const auto shape = [](const PolyArg& p) {
    return std::to_string(p.components) + " components of " + std::to_string(p.limbs) + " limbs";
  };
  const int level = context.level_of_limbs(a.limbs);
  if (a.components != 2 || level < 0) {
    refuse("first operand has " + shape(a) + ", expected 2 components at a level of context " +
           std::to_string(context.id()));
  }
  if (b.components != 2 || b.limbs != a.limbs) {
    refuse("second operand has " + shape(b) + ", expected 2 components of " + std::to_string(a.limbs) + " limbs");
  }
  if (rescaled && level == 0) refuse("the operands are at level 0, expected a level above it to rescale from");
  const int out_limbs = rescaled ? context.level_basis(level - 1).count : a.limbs;
  if (out.components != 2 || out.limbs != out_limbs) {
    refuse("output has " + shape(out) + ", expected 2 components of " + std::to_string(out_limbs) + " limbs");
  }
}

void check_sum_products(const PolyArg& out, std::span<const PolyArg> a, std::span<const PolyArg> p) {
  const auto refuse = [](const std::string& what) { throw InvalidArgumentError("sum_products: " + what); };
  if (a.empty()) refuse("no terms, expected at least one");
  if (!p.empty() && p.size() != a.size()) {
    refuse(std::to_string(a.size()) + " ciphertexts and " + std::to_string(p.size()) +
           " plaintexts, expected one plaintext per ciphertext or none");
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    check_sum_term(refuse, out, a[i], i);
    if (p.empty()) continue;
    if (p[i].components != 1 || p[i].limbs != out.limbs) {
      refuse("plaintext " + std::to_string(i) + " has " + std::to_string(p[i].components) + " components of " +
             std::to_string(p[i].limbs) + " limbs, expected 1 of " + std::to_string(out.limbs));
    }
    if (p[i].buffer == out.buffer) refuse("plaintext " + std::to_string(i) + " is the output, expected another buffer");
  }
}

namespace {

// Level 0 of several primes (the 32-bit family: two mains): each
// coefficient's integer in (-Q_0 / 2, Q_0 / 2] by Garner's algorithm, then
// its residue modulo every prime of the top level. Q_0 < 2^63 (checked).
void lift_level_zero_centered(const Context& context, const u64* in, u64* out, int out_limbs) {
  const std::size_t n = context.ring_degree();
  const int count = context.level_basis(0).count;
  const LevelZeroGarner garner = level_zero_garner(context);
  if (!garner.modulus) throw InvalidArgumentError("mod_raise: level 0's modulus is 2^63 or more, expected less");
  const std::vector<u64>& inverse = garner.inverses;
  const auto q0 = static_cast<std::int64_t>(*garner.modulus);
  std::vector<std::int64_t> centered(n);
  for (std::size_t k = 0; k < n; ++k) {
    u64 x = 0;
    u64 m = 1;
    for (int j = 0; j < count; ++j) {
      const Modulus& qj = context.level_modulus(0, j);
      const u64 r = in[static_cast<std::size_t>(j) * n + k];
      const u64 t = mul_mod(sub_mod(r, x % qj.value, qj.value), inverse[static_cast<std::size_t>(j)], qj);
      x += m * t;
      m *= qj.value;
    }
    const auto v = static_cast<std::int64_t>(x);
    centered[k] = v > (q0 - 1) / 2 ? v - q0 : v;
  }
  for (int i = 0; i < out_limbs; ++i) {
    const auto qi = static_cast<std::int64_t>(context.level_modulus(context.max_level(), i).value);
    u64* dst = out + static_cast<std::size_t>(i) * n;
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t r = centered[k] % qi;
      dst[k] = static_cast<u64>(r < 0 ? r + qi : r);
    }
  }
}

}  // namespace

void Backend::mod_raise(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  const Context& context = c.context();
  const std::size_t n = context.ring_degree();
  const int zero_limbs = context.level_basis(0).count;
  if (a.limbs != zero_limbs || out.components != a.components) {
    throw InvalidArgumentError("mod_raise: the input has " + std::to_string(a.limbs) + " limbs and " +
                               std::to_string(a.components) + " components, expected " + std::to_string(zero_limbs) +
                               " limbs (level 0) and " + std::to_string(out.components) + " components");
  }
  std::vector<u64> in(static_cast<std::size_t>(a.components) * static_cast<std::size_t>(a.limbs) * n);
  download_residues(*this, *a.buffer, in, context.word_size());
  std::vector<u64> raised(static_cast<std::size_t>(out.components) * static_cast<std::size_t>(out.limbs) * n);
  for (int comp = 0; comp < out.components; ++comp) {
    const u64* src = in.data() + static_cast<std::size_t>(comp) * static_cast<std::size_t>(a.limbs) * n;
    u64* component = raised.data() + static_cast<std::size_t>(comp) * static_cast<std::size_t>(out.limbs) * n;
    if (zero_limbs > 1) {
      lift_level_zero_centered(context, src, component, out.limbs);
      continue;
    }
    const u64 q0 = context.level_modulus(0, 0).value;
    for (int i = 0; i < out.limbs; ++i) {
      const Modulus& qi = context.level_modulus(context.max_level(), i);
      lift_centered(src, component + static_cast<std::size_t>(i) * n, n, q0, qi, q0 % qi.value);
    }
  }
  upload_residues(*this, *out.buffer, raised, context.word_size());
}

std::unique_ptr<DeviceCommunicator> Backend::join_communicator(const CommunicatorId&, int, int,
                                                               std::chrono::milliseconds) {
  throw BackendError("backend '" + name() + "' has no device collectives (communicator_id() is empty)");
}

std::unique_ptr<Recording> Backend::end_capture() {
  throw StateError("backend '" + name() + "' end_capture: no capture is in progress");
}

}  // namespace fhelium
