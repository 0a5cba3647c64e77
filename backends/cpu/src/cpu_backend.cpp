#include "fhelium/cpu/cpu_backend.hpp"

#include <omp.h>

#include <cstring>
#include <memory>
#include <string>

#include "cpu_communicator.hpp"
#include "cpu_types.hpp"
#include "fhelium/backend/limb_kernels.hpp"
#include "fhelium/backend/recording_backend.hpp"
#include "fhelium/error.hpp"
#include "keyswitch.hpp"
#include "parallel.hpp"

namespace fhelium::cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options)
      : threads_(options.threads > 0 ? options.threads : omp_get_max_threads()) {}

  std::string name() const override { return "cpu"; }

  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
    return std::make_shared<CpuContext>(std::move(context), threads_);
  }

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override { return std::make_shared<CpuBuffer>(pool_, bytes); }

  void upload(Buffer& dst, const void* src, std::size_t bytes) override {
    check_size(dst, bytes, "upload");
    std::memcpy(static_cast<CpuBuffer&>(dst).data(), src, bytes);
  }

  // The value's own memory is lent: a load writes and checks it in place.
  void upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) override {
    check_size(dst, bytes, "upload_filled");
    auto* data = reinterpret_cast<std::byte*>(static_cast<CpuBuffer&>(dst).data());
    for (std::size_t offset = 0; offset < bytes; offset += upload_chunk_bytes) {
      fill(std::span(data + offset, std::min(upload_chunk_bytes, bytes - offset)), offset);
    }
  }

  void download(const Buffer& src, void* dst, std::size_t bytes) override {
    check_size(src, bytes, "download");
    std::memcpy(dst, static_cast<const CpuBuffer&>(src).data(), bytes);
  }

  void synchronize() override {}

  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream*) override {
    check_size(dst, bytes, "copy");
    check_size(src, bytes, "copy");
    std::memcpy(static_cast<CpuBuffer&>(dst).data(), static_cast<const CpuBuffer&>(src).data(), bytes);
  }

  MemoryUsage memory_usage() const override { return pool_->usage(); }

  bool has_device_collectives() const override { return true; }
  std::optional<CommunicatorId> communicator_id() override { return new_communicator_id(); }
  std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                        std::chrono::milliseconds timeout) override {
    return join_cpu_communicator(id, ranks, rank, timeout);
  }

  void add(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    with_word(bc.context(),
              [&](auto w) { binary<decltype(w)>(bc, out, a, b, [](auto... args) { add_residues(args...); }); });
  }

  void sub(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    with_word(bc.context(),
              [&](auto w) { binary<decltype(w)>(bc, out, a, b, [](auto... args) { subtract_residues(args...); }); });
  }

  void negate(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    with_word(bc.context(), [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64 q) {
        const W* x = limb_of<W>(a, n, c, i);
        W* o = limb_of<W>(out, n, c, i);
        for (std::size_t k = 0; k < n; ++k) o[k] = static_cast<W>(neg_mod(x[k], q));
      });
    });
  }

  void add_constant(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                    std::span<const std::uint64_t> residues, bool ntt_domain) override {
    with_word(bc.context(), [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64 q) {
        const W* x = limb_of<W>(a, n, c, i);
        W* o = limb_of<W>(out, n, c, i);
        if (o != x) std::memcpy(o, x, n * sizeof(W));
        if (c != 0) return;
        const u64 r = residues[static_cast<std::size_t>(i)];
        if (ntt_domain) {
          for (std::size_t k = 0; k < n; ++k) o[k] = static_cast<W>(add_mod(o[k], r, q));
        } else {
          o[0] = static_cast<W>(add_mod(o[0], r, q));
        }
      });
    });
  }

  void multiply_constant(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> residues) override {
    with_word(bc.context(), [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64 q) {
        scale_limb(limb_of<W>(a, n, c, i), limb_of<W>(out, n, c, i), n, residues[static_cast<std::size_t>(i)], q);
      });
    });
  }

  void multiply_plain(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& p) override {
    const Context& ctx = bc.context();
    const int level = level_of(ctx, out);
    with_word(ctx, [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64) {
        multiply_residues(limb_of<W>(a, n, c, i), limb_of<W>(p, n, 0, i), limb_of<W>(out, n, c, i), n,
                          reducer<W>(ctx.level_modulus(level, i)));
      });
    });
  }

  // Limb by limb: each output row is finished while its operands' rows are
  // in cache (the default makes a pass over the whole output per term).
  void sum_products(const BackendContext& bc, const PolyArg& out, std::span<const PolyArg> a,
                    std::span<const PolyArg> p) override {
    check_sum_products(out, a, p);
    const Context& ctx = bc.context();
    const int level = level_of(ctx, out);
    with_word(ctx, [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64 q) {
        const auto product = [&](std::size_t t, W* into) {
          multiply_residues(limb_of<W>(a[t], n, c, i), limb_of<W>(p[t], n, 0, i), into, n,
                            reducer<W>(ctx.level_modulus(level, i)));
        };
        W* o = limb_of<W>(out, n, c, i);
        if (p.empty()) {
          std::memcpy(o, limb_of<W>(a[0], n, c, i), n * sizeof(W));
        } else {
          product(0, o);
        }
        std::vector<W> term(p.empty() || a.size() == 1 ? 0 : n);
        for (std::size_t t = 1; t < a.size(); ++t) {
          const W* y = limb_of<W>(a[t], n, c, i);
          if (!p.empty()) {
            product(t, term.data());
            y = term.data();
          }
          add_residues(o, y, o, n, static_cast<W>(q));
        }
      });
    });
  }

  // Limb by limb, as sum_products.
  void sum_constant_products(const BackendContext& bc, const PolyArg& out, std::span<const PolyArg> a,
                             std::span<const std::uint64_t> r) override {
    check_sum_constant_products(out, a, r);
    const auto limbs = static_cast<std::size_t>(out.limbs);
    with_word(bc.context(), [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64 q) {
        const auto limb = static_cast<std::size_t>(i);
        W* o = limb_of<W>(out, n, c, i);
        scale_limb(limb_of<W>(a[0], n, c, i), o, n, r[limb], q);
        std::vector<W> term(a.size() == 1 ? 0 : n);
        for (std::size_t t = 1; t < a.size(); ++t) {
          scale_limb(limb_of<W>(a[t], n, c, i), term.data(), n, r[t * limbs + limb], q);
          add_residues(o, term.data(), o, n, static_cast<W>(q));
        }
      });
    });
  }

  void multiply(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const Context& c = ctx.context();
    const std::size_t n = c.ring_degree();
    const int level = level_of(c, out);
    with_word(c, [&](auto word) {
      using W = decltype(word);
      parallel_for(ctx.threads(), static_cast<std::size_t>(out.limbs), [&](std::size_t l) {
        const int i = static_cast<int>(l);
        const auto q = reducer<W>(c.level_modulus(level, i));
        const W *a0 = limb_of<W>(a, n, 0, i), *a1 = limb_of<W>(a, n, 1, i);
        const W *b0 = limb_of<W>(b, n, 0, i), *b1 = limb_of<W>(b, n, 1, i);
        W *d0 = limb_of<W>(out, n, 0, i), *d1 = limb_of<W>(out, n, 1, i), *d2 = limb_of<W>(out, n, 2, i);
        multiply_residues(a0, b0, d0, n, q);
        multiply_cross(a0, b1, a1, b0, d1, n, q);
        multiply_residues(a1, b1, d2, n, q);
      });
    });
  }

  void to_ntt(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    const Context& ctx = bc.context();
    const int level = level_of(ctx, out);
    with_word(ctx, [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64) {
        ctx.ntt(ctx.key_limb(level, i)).forward(copy_limb<W>(out, a, n, c, i));
      });
    });
  }

  void to_coefficient(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    const Context& ctx = bc.context();
    const int level = level_of(ctx, out);
    with_word(ctx, [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64) {
        ctx.ntt(ctx.key_limb(level, i)).inverse(copy_limb<W>(out, a, n, c, i));
      });
    });
  }

  void rescale(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const Context& c = ctx.context();
    const std::size_t n = c.ring_degree();
    const RescaleLevel& rs = c.rescale(level_of(c, a));
    if (rs.last_inverse.empty() || c.word_size() == WordSize::bits32) {
      with_word(c, [&](auto word) { rescale_general<decltype(word)>(ctx, out, a); });
      return;
    }
    const int last = out.limbs;  // index of the dropped prime
    const u64 q_last = c.q()[static_cast<std::size_t>(last)].value;
    std::lock_guard lock(ctx.mutex());
    KeySwitchWorkspace& ws = ctx.workspace();
    // The dropped limb of every component, in the coefficient domain, shifted
    // by floor(q_last / 2) so that the division rounds.
    parallel_for(ctx.threads(), static_cast<std::size_t>(out.components), [&](std::size_t comp) {
      u64* t = ws.rotated.data() + comp * n;
      std::memcpy(t, limb_of(a, n, static_cast<int>(comp), last), n * sizeof(u64));
      c.ntt(last).inverse(t);
      const u64 half = q_last >> 1;
      for (std::size_t k = 0; k < n; ++k) t[k] = add_mod(t[k], half, q_last);
    });
    const auto limbs = static_cast<std::size_t>(out.limbs);
    parallel_for(ctx.threads(), static_cast<std::size_t>(out.components) * limbs, [&](std::size_t index) {
      const int comp = static_cast<int>(index / limbs);
      const int i = static_cast<int>(index % limbs);
      const Modulus& qm = c.q()[static_cast<std::size_t>(i)];
      const u64* t = ws.rotated.data() + static_cast<std::size_t>(comp) * n;
      u64* o = limb_of(out, n, comp, i);
      reduce_subtract(t, o, n, qm, rs.half_last[static_cast<std::size_t>(i)]);
      c.ntt(i).forward(o);
      multiply_difference(limb_of(a, n, comp, i), o, o, n, rs.last_inverse[static_cast<std::size_t>(i)],
                          rs.last_inverse_shoup[static_cast<std::size_t>(i)], qm.value);
    });
  }

  void drop_limbs(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    const Context& ctx = bc.context();
    // out's primes are a window of a's: they start `offset` limbs in.
    const int offset = ctx.level_basis(level_of(ctx, out)).first - ctx.level_basis(level_of(ctx, a)).first;
    with_word(ctx, [&](auto word) {
      using W = decltype(word);
      for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64) {
        W* o = limb_of<W>(out, n, c, i);
        const W* x = limb_of<W>(a, n, c, i + offset);
        if (o != x) std::memmove(o, x, n * sizeof(W));
      });
    });
  }

  void relinearize(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const KeyArg& key) override {
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const std::size_t n = ctx.context().ring_degree();
    const int level = level_of(ctx.context(), a);
    std::lock_guard lock(ctx.mutex());
    with_word(ctx.context(), [&](auto word) {
      using W = decltype(word);
      mod_up_inner_product(ctx, limb_of<W>(a, n, 2, 0), level, key);
      mod_down_add(ctx, level, limb_of<W>(out, n, 0, 0), limb_of<W>(a, n, 0, 0), limb_of<W>(out, n, 1, 0),
                   limb_of<W>(a, n, 1, 0));
    });
  }

  void rotate(const BackendContext& bc, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override {
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const std::size_t n = ctx.context().ring_degree();
    const int level = level_of(ctx.context(), a);
    const auto& perm = ctx.automorphism(galois_element);
    std::lock_guard lock(ctx.mutex());
    KeySwitchWorkspace& ws = ctx.workspace();
    with_word(ctx.context(), [&](auto word) {
      using W = decltype(word);
      W* c0 = scratch<W>(ws.rotated);
      apply_automorphism(ctx, perm, a, 0, c0);
      mod_up_inner_product(ctx, limb_of<W>(a, n, 1, 0), level, key, galois_element, perm.data());
      mod_down_add(ctx, level, limb_of<W>(out, n, 0, 0), c0, limb_of<W>(out, n, 1, 0), static_cast<const W*>(nullptr));
    });
  }

  void rotate_hoisted(const BackendContext& bc, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const std::size_t n = ctx.context().ring_degree();
    const int level = level_of(ctx.context(), a);
    std::vector<const std::vector<std::uint32_t>*> perms;
    for (auto g : galois_elements) perms.push_back(&ctx.automorphism(g));
    std::lock_guard lock(ctx.mutex());
    KeySwitchWorkspace& ws = ctx.workspace();
    with_word(ctx.context(), [&](auto word) {
      using W = decltype(word);
      mod_up(ctx, limb_of<W>(a, n, 1, 0), level);
      for (std::size_t r = 0; r < outs.size(); ++r) {
        W* c0 = scratch<W>(ws.rotated);
        apply_automorphism(ctx, *perms[r], a, 0, c0);
        inner_product<W>(ctx, level, keys[r], perms[r]->data());
        mod_down_add(ctx, level, limb_of<W>(outs[r], n, 0, 0), c0, limb_of<W>(outs[r], n, 1, 0),
                     static_cast<const W*>(nullptr));
      }
    });
  }

  bool supports_rotate_sum() const override { return true; }

  // Each term's inner product into the workspace, summed into `sum`; the
  // last term's accumulators take the sum, then one ModDown adds sum g_i(c0_i).
  void rotate_sum(const BackendContext& bc, const PolyArg& out, std::span<const PolyArg> a,
                  std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    check_rotate_sum(out, a, galois_elements, keys);
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const Context& c = ctx.context();
    const std::size_t n = c.ring_degree();
    const int level = level_of(c, out);
    std::vector<const std::vector<std::uint32_t>*> perms;
    for (auto g : galois_elements) perms.push_back(&ctx.automorphism(g));
    const std::size_t q_words = static_cast<std::size_t>(out.limbs) * n;
    const std::size_t accumulator_words = 2 * static_cast<std::size_t>(out.limbs + c.special_count()) * n;
    std::lock_guard lock(ctx.mutex());
    KeySwitchWorkspace& ws = ctx.workspace();
    with_word(c, [&](auto word) {
      using W = decltype(word);
      // Every word is written before it is read: no zero fill.
      const auto sum = std::make_unique_for_overwrite<W[]>(a.size() > 1 ? accumulator_words : 0);
      const auto c0_sum = std::make_unique_for_overwrite<W[]>(q_words);
      W* accumulators = scratch<W>(ws.accumulators);
      for (std::size_t t = 0; t < a.size(); ++t) {
        W* c0 = t == 0 ? c0_sum.get() : scratch<W>(ws.rotated);
        apply_automorphism(ctx, *perms[t], a[t], 0, c0);
        if (t > 0) {
          for_each_limb(bc, {nullptr, 1, out.limbs}, [&](int, int i, std::size_t, u64 q) {
            const std::size_t offset = static_cast<std::size_t>(i) * n;
            add_residues(c0 + offset, c0_sum.get() + offset, c0_sum.get() + offset, n, static_cast<W>(q));
          });
        }
        mod_up_inner_product(ctx, limb_of<W>(a[t], n, 1, 0), level, keys[t], galois_elements[t], perms[t]->data());
        if (t + 1 == a.size()) {
          if (t > 0) add_accumulators(ctx, level, static_cast<const W*>(sum.get()), accumulators);
        } else if (t == 0) {
          std::memcpy(sum.get(), accumulators, accumulator_words * sizeof(W));
        } else {
          add_accumulators(ctx, level, static_cast<const W*>(accumulators), sum.get());
        }
      }
      mod_down_add(ctx, level, limb_of<W>(out, n, 0, 0), static_cast<const W*>(c0_sum.get()), limb_of<W>(out, n, 1, 0),
                   static_cast<const W*>(nullptr));
    });
  }

 private:
  static void check_size(const Buffer& buffer, std::size_t bytes, const char* what) {
    if (bytes > buffer.size_bytes()) {
      throw BackendError(std::string("cpu ") + what + " of " + std::to_string(bytes) + " bytes into a buffer of " +
                         std::to_string(buffer.size_bytes()) + " bytes");
    }
  }

  // The level of a Q-basis array with x.limbs limbs.
  static int level_of(const Context& c, const PolyArg& x) {
    const int level = c.level_of_limbs(x.limbs);
    if (level < 0) {
      throw BackendError("cpu: no level of context " + std::to_string(c.id()) + " has " + std::to_string(x.limbs) +
                         " limbs");
    }
    return level;
  }

  // body(component, limb, n, q) for every limb of out, in parallel.
  template <class Body>
  static void for_each_limb(const BackendContext& bc, const PolyArg& out, const Body& body) {
    const auto& ctx = static_cast<const CpuContext&>(bc);
    const Context& c = ctx.context();
    const std::size_t n = c.ring_degree();
    const auto limbs = static_cast<std::size_t>(out.limbs);
    const int level = level_of(c, out);
    parallel_for(ctx.threads(), static_cast<std::size_t>(out.components) * limbs, [&](std::size_t index) {
      const int i = static_cast<int>(index % limbs);
      body(static_cast<int>(index / limbs), i, n, c.level_modulus(level, i).value);
    });
  }

  // out[k] = x[k] w mod q (Shoup's product in the words' own width).
  template <class W>
  static void scale_limb(const W* x, W* out, std::size_t n, u64 w, u64 q) {
    const auto ww = static_cast<W>(w), qq = static_cast<W>(q);
    const W w_shoup = shoup(ww, qq);
    for (std::size_t k = 0; k < n; ++k) out[k] = mul_shoup(x[k], ww, w_shoup, qq);
  }

  // Rescale by several primes (the 32-bit family's rational chain):
  // out = (x A - [x A]_D) / D on level l - 1's primes, [x A]_D the centered
  // lift of the dropped limbs times A; x A is 0 modulo an added prime.
  template <class W>
  static void rescale_general(const CpuContext& ctx, const PolyArg& out, const PolyArg& a) {
    const Context& c = ctx.context();
    const std::size_t n = c.ring_degree();
    const int from = level_of(c, a);
    const int to = from - 1;
    const RescaleLevel& rs = c.rescale(from);
    const std::size_t dropped = rs.dropped.size();
    const auto limbs = static_cast<std::size_t>(out.limbs);
    std::lock_guard lock(ctx.mutex());
    KeySwitchWorkspace& ws = ctx.workspace();
    for (int comp = 0; comp < out.components; ++comp) {
      W* lifted = scratch<W>(ws.accumulators);  // the dropped limbs, coefficient domain, times A
      parallel_for(ctx.threads(), dropped, [&](std::size_t d) {
        const int limb = rs.dropped[d];
        W* t = lifted + d * n;
        std::memcpy(t, limb_of<W>(a, n, comp, limb), n * sizeof(W));
        c.ntt(c.key_limb(from, limb)).inverse(t);
        scale_limb(t, t, n, rs.added_mod_dropped[d], c.level_modulus(from, limb).value);
      });
      W* converted = scratch<W>(ws.converted);
      rs.from_dropped->convert(lifted, converted, n, 0, n);
      parallel_for(ctx.threads(), limbs, [&](std::size_t i) {
        const u64 q = c.level_modulus(to, static_cast<int>(i)).value;
        W* conv = converted + i * n;
        c.ntt(c.key_limb(to, static_cast<int>(i))).forward(conv);
        W* o = limb_of<W>(out, n, comp, static_cast<int>(i));
        const int source = rs.source[i];
        if (source < 0) {  // an added prime: x A = 0 here
          std::memset(o, 0, n * sizeof(W));
        } else {
          scale_limb(limb_of<W>(a, n, comp, source), o, n, rs.added_mod_out[i], q);
        }
        multiply_difference(o, conv, o, n, static_cast<W>(rs.dropped_inverse[i]),
                            shoup_constant<W>(rs.dropped_inverse[i], q, rs.dropped_inverse_shoup[i]),
                            static_cast<W>(q));
      });
    }
  }

  // op(x, y, out, n, q) on every limb; components of a beyond b's are copied.
  template <class W, class Op>
  static void binary(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b, Op op) {
    for_each_limb(bc, out, [&](int c, int i, std::size_t n, u64 q) {
      const W* x = limb_of<W>(a, n, c, i);
      W* o = limb_of<W>(out, n, c, i);
      if (c >= b.components) {
        if (o != x) std::memcpy(o, x, n * sizeof(W));
        return;
      }
      op(x, limb_of<W>(b, n, c, i), o, n, static_cast<W>(q));
    });
  }

  template <class W>
  static W* copy_limb(const PolyArg& out, const PolyArg& a, std::size_t n, int c, int i) {
    W* o = limb_of<W>(out, n, c, i);
    const W* x = limb_of<W>(a, n, c, i);
    if (o != x) std::memcpy(o, x, n * sizeof(W));
    return o;
  }

  template <class W>
  static void apply_automorphism(const CpuContext& ctx, const std::vector<std::uint32_t>& perm, const PolyArg& a,
                                 int component, W* out) {
    const std::size_t n = ctx.context().ring_degree();
    parallel_for(ctx.threads(), static_cast<std::size_t>(a.limbs), [&](std::size_t i) {
      const W* x = limb_of<W>(a, n, component, static_cast<int>(i));
      W* o = out + i * n;
      for (std::size_t k = 0; k < n; ++k) o[k] = x[perm[k]];
    });
  }

  int threads_;
  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
};

}  // namespace

std::shared_ptr<Backend> make_cpu_backend(CpuBackendOptions options) {
  // Streams, events and capture come from the recording decorator.
  return std::make_shared<RecordingBackend>(std::make_shared<CpuBackend>(options));
}

}  // namespace fhelium::cpu
