#include "cuda_context.hpp"

#include <bit>
#include <cstring>
#include <string>

#include "fhelium/backend/rns.hpp"
#include "fhelium/context.hpp"
#include "narrow_tables.hpp"

namespace fhelium::cuda {
namespace {

// Host image of the tables: words appended in order, offsets recorded.
class Blob {
 public:
  std::size_t add(const std::vector<u64>& words) {
    const std::size_t at = words_.size();
    words_.insert(words_.end(), words.begin(), words.end());
    return at;
  }
  std::size_t add(const std::vector<double>& values) {
    std::vector<u64> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<u64>(values[i]);
    return add(bits);
  }
  const std::vector<u64>& words() const { return words_; }

 private:
  std::vector<u64> words_;
};

struct ConverterOffsets {
  int from_count;
  int to_count;
  std::size_t from_value, hat_inverse, hat_inverse_shoup, inverse_double, hat_mod_to, hat_mod_to_shoup,
      overflow_mod_to, to_key_limb;
};

ConverterOffsets add_converter(Blob& blob, const BasisConverter& c, const std::vector<u64>& to_key_limb) {
  std::vector<u64> from_value;
  for (const Modulus& m : c.from()) from_value.push_back(m.value);
  ConverterOffsets o{};
  o.from_count = static_cast<int>(c.from().size());
  o.to_count = static_cast<int>(c.to().size());
  o.from_value = blob.add(from_value);
  o.hat_inverse = blob.add(c.hat_inverse());
  o.hat_inverse_shoup = blob.add(c.hat_inverse_shoup());
  o.inverse_double = blob.add(c.inverse_as_double());
  o.hat_mod_to = blob.add(c.hat_mod_to());
  std::vector<u64> hat_shoup(c.hat_mod_to().size());
  const std::size_t na = c.from().size();
  for (std::size_t k = 0; k < hat_shoup.size(); ++k) hat_shoup[k] = shoup(c.hat_mod_to()[k], c.to()[k / na].value);
  o.hat_mod_to_shoup = blob.add(hat_shoup);
  o.overflow_mod_to = blob.add(c.overflow_mod_to());
  o.to_key_limb = blob.add(to_key_limb);
  return o;
}

ConverterView view_of(const ConverterOffsets& o, const u64* base) {
  return {o.from_count,
          o.to_count,
          base + o.from_value,
          base + o.hat_inverse,
          base + o.hat_inverse_shoup,
          base + o.inverse_double,
          base + o.hat_mod_to,
          base + o.hat_mod_to_shoup,
          base + o.overflow_mod_to,
          base + o.to_key_limb};
}

// Primes below this take the NTT kernels' double-precision path (exact below
// 2^44, see ntt_arith.cuh).
constexpr u64 fp64_ntt_limit = u64{1} << 44;

}  // namespace

CudaContext::CudaContext(std::shared_ptr<const Context> context, std::shared_ptr<DeviceRuntime> runtime)
    : context_(std::move(context)), runtime_(std::move(runtime)), workspace_pool_(runtime_, context_->ring_degree()) {
  const Context& c = *context_;
  if (c.word_size() == WordSize::bits32) {
    narrow_ = std::make_unique<narrow::Tables>(c, runtime_);
    table_bytes_ = narrow_->table_bytes();
    runtime_->synchronize();  // tables are in place before the first operation
    return;
  }
  const std::size_t n = c.ring_degree();
  const int key_limbs = c.key_limbs();
  const int max_level = c.max_level();
  const int specials = c.special_count();

  Blob blob;
  // Twiddles as (w, w_shoup) pairs, 16-byte aligned (the blob starts aligned).
  std::size_t roots_at = 0;
  std::size_t inv_roots_at = 0;
  {
    std::vector<u64> r, ir;
    for (int limb = 0; limb < key_limbs; ++limb) {
      const NttTable& t = c.ntt(limb);
      for (std::size_t k = 0; k < n; ++k) {
        r.insert(r.end(), {t.roots()[k], t.roots_shoup()[k]});
        ir.insert(ir.end(), {t.inverse_roots()[k], t.inverse_roots_shoup()[k]});
      }
    }
    roots_at = blob.add(r);
    inv_roots_at = blob.add(ir);
  }
  // The roots as doubles (exact below 2^53), read by the double-precision path.
  std::size_t roots_fp_at = 0;
  std::size_t inv_roots_fp_at = 0;
  {
    std::vector<double> r, ir;
    for (int limb = 0; limb < key_limbs; ++limb) {
      const NttTable& t = c.ntt(limb);
      for (std::size_t k = 0; k < n; ++k) {
        r.push_back(static_cast<double>(t.roots()[k]));
        ir.push_back(static_cast<double>(t.inverse_roots()[k]));
      }
    }
    roots_fp_at = blob.add(r);
    inv_roots_fp_at = blob.add(ir);
  }
  std::vector<u64> primes;
  for (int limb = 0; limb < key_limbs; ++limb) {
    const Modulus& m = c.key_modulus(limb);
    const NttTable& t = c.ntt(limb);
    const u64 inverse_bits = std::bit_cast<u64>(1.0 / static_cast<double>(m.value));
    primes.insert(primes.end(), {m.value, m.ratio_lo, m.ratio_hi, t.inverse_n(), t.inverse_n_shoup(), inverse_bits});
  }
  static_assert(sizeof(DevPrime) == 6 * sizeof(u64));
  const std::size_t primes_at = blob.add(primes);

  struct LevelOffsets {
    std::vector<ConverterOffsets> mod_up;
    ConverterOffsets mod_down;
    std::size_t p_inverse, p_inverse_shoup;
    std::size_t last_inverse, last_inverse_shoup, half_last;
  };
  std::vector<LevelOffsets> levels;
  for (int level = 0; level <= max_level; ++level) {
    const KeySwitchLevel& ks = c.key_switch(level);
    LevelOffsets lo{};
    for (int j = 0; j < ks.digits; ++j) {
      const BasisConverter& conv = ks.mod_up[static_cast<std::size_t>(j)];
      // Targets: the other primes of Q_level in order, then P.
      const int begin = j * c.digit_size();
      const int own = static_cast<int>(conv.from().size());
      std::vector<u64> to_key_limb;
      for (int i = 0; i <= level; ++i) {
        if (i < begin || i >= begin + own) to_key_limb.push_back(static_cast<u64>(i));
      }
      for (int k = 0; k < specials; ++k) to_key_limb.push_back(static_cast<u64>(max_level + 1 + k));
      lo.mod_up.push_back(add_converter(blob, conv, to_key_limb));
    }
    std::vector<u64> q_limbs;
    for (int i = 0; i <= level; ++i) q_limbs.push_back(static_cast<u64>(i));
    lo.mod_down = add_converter(blob, ks.mod_down, q_limbs);
    lo.p_inverse = blob.add(ks.p_inverse);
    lo.p_inverse_shoup = blob.add(ks.p_inverse_shoup);
    const RescaleLevel& rs = c.rescale(level);
    lo.last_inverse = blob.add(rs.last_inverse);
    lo.last_inverse_shoup = blob.add(rs.last_inverse_shoup);
    lo.half_last = blob.add(rs.half_last);
    levels.push_back(std::move(lo));
  }

  // Upload the words, then the converter views that point into them.
  const std::vector<u64>& words = blob.words();
  table_bytes_ = words.size() * sizeof(u64);
  tables_ = DeviceAllocation(runtime_, table_bytes_);
  const u64* base = tables_.words();
  runtime_->upload(tables_.words(), words.data(), table_bytes_);

  ntt_ = {reinterpret_cast<const TwiddlePair*>(base + roots_at), reinterpret_cast<const TwiddlePair*>(base + inv_roots_at),
          reinterpret_cast<const DevPrime*>(base + primes_at), std::countr_zero(n),
          reinterpret_cast<const double*>(base + roots_fp_at), reinterpret_cast<const double*>(base + inv_roots_fp_at),
          fp64_ntt_limit};

  std::vector<ConverterView> views;
  for (const auto& lo : levels) {
    for (const auto& o : lo.mod_up) views.push_back(view_of(o, base));
  }
  const std::size_t view_bytes = views.size() * sizeof(ConverterView);
  views_ = DeviceAllocation(runtime_, view_bytes);
  runtime_->upload(views_.words(), views.data(), view_bytes);
  const auto* view_base = reinterpret_cast<const ConverterView*>(views_.words());
  table_bytes_ += view_bytes;

  std::size_t view_at = 0;
  for (int level = 0; level <= max_level; ++level) {
    const LevelOffsets& lo = levels[static_cast<std::size_t>(level)];
    KeySwitchView ks{};
    ks.level = level;
    ks.digits = static_cast<int>(lo.mod_up.size());
    ks.alpha = c.digit_size();
    ks.specials = specials;
    ks.mod_up = view_base + view_at;
    view_at += lo.mod_up.size();
    ks.mod_down = view_of(lo.mod_down, base);
    ks.p_inverse = base + lo.p_inverse;
    ks.p_inverse_shoup = base + lo.p_inverse_shoup;
    key_switch_.push_back(ks);
    RescaleView rv{};
    rv.q_last = c.q()[static_cast<std::size_t>(level)].value;
    rv.last_inverse = base + lo.last_inverse;
    rv.last_inverse_shoup = base + lo.last_inverse_shoup;
    rv.half_last = base + lo.half_last;
    rescale_.push_back(rv);
  }

  WorkspacePool::Batch temps = workspace_pool_.batch();
  for (int lane = 0; lane < CaptureLanes::count; ++lane) rescale_temps_.push_back(temps.limbs<u64>(3));
  workspace_pool_.keep(std::move(temps));
  add_lane();               // lane 0, for every operation outside a capture
  runtime_->synchronize();  // tables are in place before the first operation
}

// Workspace for the top level (lower levels use a prefix of each part).
void CudaContext::add_lane() {
  const Context& c = *context_;
  const auto q_limbs = static_cast<std::size_t>(c.max_level() + 1);
  const auto digits = static_cast<std::size_t>(c.key_digits());
  const auto slots = static_cast<std::size_t>(c.key_limbs());
  const std::size_t product_limbs = fuses_multiply() ? q_limbs : 0;
  WorkspacePool::Batch buffers = workspace_pool_.batch();
  auto limbs = [&](std::size_t count) { return buffers.limbs<u64>(count); };
  LaneWork w;
  w.work = {limbs(q_limbs), limbs(digits * slots), limbs(2 * slots), limbs(2 * q_limbs), limbs(product_limbs)};
  for (int b = 0; b < DeviceRuntime::branches; ++b) {
    kernels::KeySwitchWork branch = w.work;
    branch.accumulators = limbs(2 * slots);
    branch.converted = limbs(2 * q_limbs);
    w.branches.push_back(branch);
  }
  workspace_pool_.keep(std::move(buffers));
  lanes_.push_back(std::move(w));
}

void CudaContext::provide_capture_lanes() {
  if (narrow_) {
    narrow_->provide_workspaces(*context_);
    return;
  }
  while (static_cast<int>(lanes_.size()) < DeviceRuntime::key_switch_lanes) add_lane();
}

std::size_t CudaContext::workspace_bytes() const {
  return narrow_ ? narrow_->workspace_bytes() : workspace_pool_.bytes();
}

CudaContext::~CudaContext() = default;

bool CudaContext::hoisted_on_branches(const KeySwitchView& ks) const {
  return static_cast<std::size_t>(ks.slots()) * context_->ring_degree() <= hoisted_branch_words;
}

bool CudaContext::fuses_rescale(int limbs) const {
  const int level = context_->level_of_limbs(limbs);
  if (level < 1) return false;
  if (narrow_) return narrow_->rescale(level).fuses_key_switch;
  return kernels::fuses_rescale(launch(), key_switch(level));
}

kernels::Launch CudaContext::launch() const {
  return {runtime_->stream(), ntt_, static_cast<u32>(context_->ring_degree()), context_->max_level()};
}

}  // namespace fhelium::cuda
