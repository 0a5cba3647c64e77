// Parameters: everything Context::create_with_primes needs, primes included,
// so a loaded context is the saved one and its security is checked again.
#include <istream>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/little_endian.hpp"
#include "serialization/payload.hpp"
#include "serialization/state.hpp"

namespace fhelium {

using namespace serialization;

namespace {

constexpr std::size_t fixed_bytes = 32;  // the fields before the primes
// Above any secure set (2^17 at 128 bits: log QP <= 3,525 with primes of at
// least 19 bits), and a bound on what an insecure file can make us build.
constexpr std::uint64_t max_primes = 256;

}  // namespace

void save_parameters(std::ostream& out, const Context& ctx) {
  const CkksParameters& p = ctx.params();
  std::vector<std::uint8_t> payload(fixed_bytes + 8 * (ctx.q().size() + ctx.p().size()));
  std::uint8_t* b = payload.data();
  store_le(b, static_cast<std::uint32_t>(p.log_ring_degree));
  b[4] = static_cast<std::uint8_t>(p.word_size);
  b[5] = p.secret == SecretDistribution::gaussian ? 1 : 0;
  b[6] = p.allow_insecure ? 1 : 0;
  b[7] = static_cast<std::uint8_t>(p.wide_levels);
  store_le(b + 8, static_cast<std::uint32_t>(p.hamming_weight));
  store_le(b + 12, static_cast<std::uint32_t>(p.security_bits));
  store_le(b + 16, std::bit_cast<std::uint64_t>(p.scale));
  store_le(b + 24, static_cast<std::uint32_t>(ctx.q().size()));
  store_le(b + 28, static_cast<std::uint32_t>(ctx.p().size()));
  std::uint8_t* prime = b + fixed_bytes;
  for (const auto* list : {&ctx.q(), &ctx.p()}) {
    for (const Modulus& m : *list) {
      store_le(prime, m.value);
      prime += 8;
    }
  }
  const ConstSegment segment{payload.data(), payload.size()};
  write_object(out, base_header(ctx, ObjectKind::parameters), std::span(&segment, 1), SaveOptions{});
}

std::shared_ptr<const Context> load_context(std::istream& stream) {
  const std::string what = "the parameters";
  Input in(stream);
  const ReadHeader r = read_header(in, ObjectKind::parameters);
  const Header& h = r.header;
  check_no_state(h, what);
  check_not_seeded(h, what);
  const std::uint64_t declared = h.payload_bytes;
  if (declared < fixed_bytes + 16 || declared > fixed_bytes + 8 * max_primes || declared % 8 != 0) {
    throw FormatError(what + " declare a payload of " + std::to_string(declared) + " bytes, expected " +
                      std::to_string(fixed_bytes) + " bytes and 8 per prime, with 2.." + std::to_string(max_primes) +
                      " primes");
  }
  check_sizes(h, declared, in.remaining(), what);
  std::vector<std::uint8_t> payload(static_cast<std::size_t>(declared));
  const Segment segment{payload.data(), payload.size()};
  read_object_payload(in, r, std::span(&segment, 1), [](int, int) { return std::string("the primes"); });

  const std::uint8_t* b = payload.data();
  const auto log_n = load_le<std::uint32_t>(b);
  const auto hamming_weight = load_le<std::uint32_t>(b + 8);
  const auto security_bits = load_le<std::uint32_t>(b + 12);
  const auto q_count = load_le<std::uint32_t>(b + 24);
  const auto p_count = load_le<std::uint32_t>(b + 28);
  if (std::uint64_t{q_count} + p_count != (declared - fixed_bytes) / 8) {
    throw FormatError(what + " list " + std::to_string(q_count) + " q primes and " + std::to_string(p_count) +
                      " special primes, but the payload holds " + std::to_string((declared - fixed_bytes) / 8));
  }
  if (b[4] != h.word_bits || b[5] > 1 || b[6] > 1 || log_n > 64 || hamming_weight > (1u << 17) ||
      security_bits > 1024) {
    throw FormatError(what + " hold word size " + std::to_string(b[4]) + " (header: " + std::to_string(h.word_bits) +
                      "), secret distribution " + std::to_string(b[5]) + ", allow_insecure " + std::to_string(b[6]) +
                      ", ring degree 2^" + std::to_string(log_n) + ", hamming weight " +
                      std::to_string(hamming_weight) + ", security " + std::to_string(security_bits) +
                      " bits: expected the header's word size, 0 or 1, 0 or 1, and values within range");
  }
  CkksParameters params;
  params.log_ring_degree = static_cast<int>(log_n);
  params.word_size = static_cast<WordSize>(b[4]);
  params.secret = b[5] == 1 ? SecretDistribution::gaussian : SecretDistribution::ternary;
  params.allow_insecure = b[6] == 1;
  params.wide_levels = b[7];  // Context::create_with_primes checks it against the chain
  params.hamming_weight = static_cast<int>(hamming_weight);
  params.security_bits = static_cast<int>(security_bits);
  params.scale = std::bit_cast<double>(load_le<std::uint64_t>(b + 16));
  std::vector<u64> q(q_count), p(p_count);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = load_le<std::uint64_t>(b + fixed_bytes + 8 * i);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = load_le<std::uint64_t>(b + fixed_bytes + 8 * (q.size() + i));

  std::shared_ptr<const Context> context;
  try {
    context = Context::create_with_primes(params, q, p);
  } catch (const SecurityError&) {
    throw;  // the parameters are well-formed but insecure: said as such
  } catch (const ParameterError& e) {
    throw FormatError(what + " do not make a context: " + e.what());
  }
  const Fingerprint rebuilt = context_fingerprint(*context);
  if (rebuilt != h.fingerprint) {
    throw FormatError(what + "' header carries the fingerprint " + to_hex(h.fingerprint, 8) +
                      "..., but the parameters it holds have the fingerprint " + to_hex(rebuilt, 8) + "...");
  }
  return context;
}

}  // namespace fhelium
