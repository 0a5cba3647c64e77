// The conformance suite on the in-process CPU backend (every case passes),
// and on deliberately broken backends (the suite fails, naming the broken
// operation and only that one).
#include "conformance.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <vector>

#include "fhelium/backend/forwarding_backend.hpp"
#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/error.hpp"

namespace fhelium::conformance {
namespace {

// Forwards everything to a real CPU backend; subclasses break one operation.
class BrokenBackend : public ForwardingBackend {
 public:
  BrokenBackend() : ForwardingBackend(cpu::make_cpu_backend({1})) {}
  std::string name() const override { return "broken-cpu"; }
};

// Adds 1 (mod q) to one residue of rotate's output: component 1, last limb, coefficient 17.
class CorruptRotateBackend final : public BrokenBackend {
 public:
  void rotate(const BackendContext& bc, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override {
    inner().rotate(bc, out, a, galois_element, key);
    const Context& ctx = bc.context();
    const std::size_t n = ctx.ring_degree();
    std::vector<u64> words(static_cast<std::size_t>(out.components * out.limbs) * n);
    inner().download(*out.buffer, words.data(), words.size() * sizeof(u64));
    const int limb = out.limbs - 1;
    u64& w = words[(static_cast<std::size_t>(out.limbs) + static_cast<std::size_t>(limb)) * n + 17];
    w = (w + 1) % ctx.q()[static_cast<std::size_t>(limb)].value;
    inner().upload(*out.buffer, words.data(), words.size() * sizeof(u64));
  }
};

// Adds 1 (mod q) to the last residue of to_ntt's output.
class CorruptToNttBackend final : public BrokenBackend {
 public:
  void to_ntt(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    inner().to_ntt(bc, out, a);
    const Context& ctx = bc.context();
    std::vector<u64> words(static_cast<std::size_t>(out.components * out.limbs) * ctx.ring_degree());
    inner().download(*out.buffer, words.data(), words.size() * sizeof(u64));
    words.back() = (words.back() + 1) % ctx.q()[static_cast<std::size_t>(out.limbs - 1)].value;
    inner().upload(*out.buffer, words.data(), words.size() * sizeof(u64));
  }
};

// Never writes rescale's output.
class SkipRescaleBackend final : public BrokenBackend {
 public:
  void rescale(const BackendContext&, const PolyArg&, const PolyArg&) override {}
};

// Never writes multiply_relinearize's output (multiply and relinearize are fine).
class SkipMultiplyRelinearizeBackend final : public BrokenBackend {
 public:
  void multiply_relinearize(const BackendContext&, const PolyArg&, const PolyArg&, const PolyArg&,
                            const KeyArg&) override {}
};

// Never writes multiply_relinearize_rescale's output (multiply_relinearize and rescale are fine).
class SkipMultiplyRelinearizeRescaleBackend final : public BrokenBackend {
 public:
  void multiply_relinearize_rescale(const BackendContext&, const PolyArg&, const PolyArg&, const PolyArg&,
                                    const KeyArg&) override {}
};

// Never writes sum_products' output (multiply_plain and add are fine).
class SkipSumProductsBackend final : public BrokenBackend {
 public:
  void sum_products(const BackendContext&, const PolyArg&, std::span<const PolyArg>,
                    std::span<const PolyArg>) override {}
};

// Never writes sum_constant_products' output.
class SkipSumConstantProductsBackend final : public BrokenBackend {
 public:
  void sum_constant_products(const BackendContext&, const PolyArg&, std::span<const PolyArg>,
                             std::span<const std::uint64_t>) override {}
};

// Never writes sum_product_groups' outputs.
class SkipSumProductGroupsBackend final : public BrokenBackend {
 public:
  void sum_product_groups(const BackendContext&, std::span<const PolyArg>, std::span<const PolyArg>,
                          std::span<const PolyArg>, std::span<const std::size_t>) override {}
};

class SkipRotateSumBackend final : public BrokenBackend {
 public:
  void rotate_sum(const BackendContext&, const PolyArg&, std::span<const PolyArg>, std::span<const std::uint32_t>,
                  std::span<const KeyArg>) override {}
};

// A backend without rotate_sum, as an older plugin.
class NoRotateSumBackend final : public BrokenBackend {
 public:
  bool supports_rotate_sum() const override { return false; }
};

// negate fails the way a device error would.
class ThrowingNegateBackend final : public BrokenBackend {
 public:
  void negate(const BackendContext&, const PolyArg&, const PolyArg&) override {
    throw BackendError("simulated device error in negate");
  }
};

ConformanceOptions small_options() {
  ConformanceOptions o;
  o.log_n = {12};
  o.trials = 1;
  return o;
}

// The failed cases; the first few are printed, to show what a report looks like.
std::vector<CaseResult> failures(const std::vector<CaseResult>& results) {
  std::vector<CaseResult> f;
  std::copy_if(results.begin(), results.end(), std::back_inserter(f), [](const CaseResult& r) { return !r.passed; });
  for (std::size_t i = 0; i < std::min<std::size_t>(f.size(), 3); ++i) {
    std::cout << "  FAIL " << f[i].name << ": " << f[i].detail << "\n";
  }
  std::cout << "  " << f.size() << " of " << results.size() << " cases failed\n";
  return f;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const CaseResult* find_case(const std::vector<CaseResult>& results, const std::string& name) {
  for (const auto& r : results) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// run_conformance throws InvalidArgumentError, before running anything, with every part in its message.
void expect_refused(const std::shared_ptr<Backend>& backend, const ConformanceOptions& o,
                    const std::vector<std::string>& parts) {
  try {
    run_conformance(backend, o);
    ADD_FAILURE() << "options accepted";
  } catch (const InvalidArgumentError& e) {
    for (const auto& part : parts) EXPECT_TRUE(contains(e.what(), part)) << e.what();
  }
}

TEST(Conformance, CpuBackendPassesEveryCase) {
  const auto results = run_conformance(cpu::make_cpu_backend({1}), ConformanceOptions{});
  EXPECT_GT(results.size(), 1000u);
  for (const auto& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  // Names carry the shape and the operation; partial digits are covered.
  EXPECT_NE(find_case(results, "N4096/L3/K1/level3/rotate(5)"), nullptr);
  EXPECT_NE(find_case(results, "N16384/L6/K3/level6/rotate_hoisted(1,5,-3,0,2)"), nullptr);
  EXPECT_NE(find_case(results, "N8192/L4/K2/level1/direct:rescale"), nullptr);
  EXPECT_NE(find_case(results, "N4096/L3/K1/level0/add_scalar(2,coefficient)"), nullptr);
}

TEST(Conformance, CorruptedRotationFailsOnlyRotations) {
  const auto results = run_conformance(std::make_shared<CorruptRotateBackend>(), small_options());
  const auto failed = failures(results);
  ASSERT_FALSE(failed.empty());
  for (const auto& r : failed) {
    EXPECT_TRUE(contains(r.name, "rotate") || contains(r.name, "conjugate")) << r.name << ": " << r.detail;
  }
  const auto* rotate = find_case(results, "N4096/L4/K2/level2/rotate(5)");
  ASSERT_NE(rotate, nullptr);
  EXPECT_FALSE(rotate->passed);
  EXPECT_TRUE(contains(rotate->detail, "1 of ")) << rotate->detail;
  EXPECT_TRUE(contains(rotate->detail, "component 1, limb 2, coefficient 17")) << rotate->detail;
  const auto* direct = find_case(results, "N4096/L4/K2/level2/direct:rotate(5)");
  ASSERT_NE(direct, nullptr);
  EXPECT_FALSE(direct->passed);
  const auto* composed = find_case(results, "N4096/L3/K1/level3/rotate(7,composed)");
  ASSERT_NE(composed, nullptr);
  EXPECT_FALSE(composed->passed);
  // Hoisted rotations are a separate backend operation, untouched here.
  const auto* hoisted = find_case(results, "N4096/L3/K1/level3/rotate_hoisted(1,5,-3,0,2)");
  ASSERT_NE(hoisted, nullptr);
  EXPECT_TRUE(hoisted->passed) << hoisted->detail;
  const auto* add = find_case(results, "N4096/L3/K1/level3/add");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->passed);
}

// The suite calls the backend's own multiply_relinearize (a fused version is
// checked, not the default's multiply then relinearize).
TEST(Conformance, UnwrittenMultiplyRelinearizeOutputFails) {
  const auto results = run_conformance(std::make_shared<SkipMultiplyRelinearizeBackend>(), small_options());
  const auto failed = failures(results);
  ASSERT_FALSE(failed.empty());
  for (const auto& r : failed) EXPECT_TRUE(contains(r.name, "multiply_relinearize")) << r.name << ": " << r.detail;
  const auto* direct = find_case(results, "N4096/L3/K1/level3/direct:multiply_relinearize");
  ASSERT_NE(direct, nullptr);
  EXPECT_FALSE(direct->passed);
  EXPECT_TRUE(contains(direct->detail, "never written")) << direct->detail;
  const auto* relinearize = find_case(results, "N4096/L3/K1/level3/relinearize");
  ASSERT_NE(relinearize, nullptr);
  EXPECT_TRUE(relinearize->passed) << relinearize->detail;
}

// Likewise multiply_relinearize_rescale: the Engine's reaches the backend's
// own version, and so does a direct call; multiply_relinearize and rescale
// alone pass.
TEST(Conformance, UnwrittenMultiplyRelinearizeRescaleOutputFails) {
  const auto results = run_conformance(std::make_shared<SkipMultiplyRelinearizeRescaleBackend>(), small_options());
  const auto failed = failures(results);
  ASSERT_FALSE(failed.empty());
  for (const auto& r : failed) {
    EXPECT_TRUE(contains(r.name, "multiply_relinearize_rescale")) << r.name << ": " << r.detail;
  }
  for (const char* name : {"multiply_relinearize_rescale", "direct:multiply_relinearize_rescale"}) {
    const auto* c = find_case(results, std::string("N4096/L3/K1/level3/") + name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_FALSE(c->passed) << name;
  }
  for (const char* name : {"multiply_relinearize", "rescale"}) {
    const auto* c = find_case(results, std::string("N4096/L3/K1/level3/") + name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_TRUE(c->passed) << name << ": " << c->detail;
  }
}

// A backend that never writes one of the sum operations: only cases named
// "sum" fail, the `failing` ones among them, and `intact` (the same product
// without the sum) passes.
void expect_only_sums_fail(std::shared_ptr<Backend> backend, std::initializer_list<const char*> failing,
                           const char* intact) {
  const auto results = run_conformance(std::move(backend), small_options());
  const auto failed = failures(results);
  ASSERT_FALSE(failed.empty());
  for (const auto& r : failed) EXPECT_TRUE(contains(r.name, "sum")) << r.name << ": " << r.detail;
  for (const char* name : failing) {
    const auto* c = find_case(results, std::string("N4096/L3/K1/level3/") + name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_FALSE(c->passed) << name;
  }
  const auto* kept = find_case(results, std::string("N4096/L3/K1/level3/") + intact);
  ASSERT_NE(kept, nullptr) << intact;
  EXPECT_TRUE(kept->passed) << kept->detail;
}

// Likewise sum_products: the Engine's sum and multiply_plain_sum reach the
// backend's own version, and so does a direct call.
TEST(Conformance, UnwrittenSumProductsOutputFails) {
  expect_only_sums_fail(std::make_shared<SkipSumProductsBackend>(),
                        {"sum(20)", "multiply_plain_sum(20)", "direct:sum_products"}, "multiply_plain");
}

// Likewise sum_constant_products: the Engine's multiply_scalar_sum reaches
// it, and so does a direct call; multiply_scalar does not.
TEST(Conformance, UnwrittenSumConstantProductsOutputFails) {
  expect_only_sums_fail(std::make_shared<SkipSumConstantProductsBackend>(),
                        {"multiply_scalar_sum(3)", "multiply_scalar_sum(20)", "direct:sum_constant_products"},
                        "multiply_scalar(-1.5)");
}

// Likewise sum_product_groups: the Engine's multiply_plain_sums reaches it,
// and so does a direct call; multiply_plain_sum does not.
TEST(Conformance, UnwrittenSumProductGroupsOutputFails) {
  expect_only_sums_fail(
      std::make_shared<SkipSumProductGroupsBackend>(),
      {"multiply_plain_sums(3 groups)", "multiply_plain_sums(18 groups, 20 inputs)", "direct:sum_product_groups"},
      "multiply_plain_sum(20)");
}

// Likewise rotate_sum: the Engine's reaches it, and so does a direct call;
// rotate does not. A backend without it is not asked for it.
TEST(Conformance, UnwrittenRotateSumOutputFails) {
  expect_only_sums_fail(std::make_shared<SkipRotateSumBackend>(),
                        {"rotate_sum(1,-3,0)", "direct:rotate_sum(5,2,conjugate)"}, "rotate(5)");
  const auto results = run_conformance(std::make_shared<NoRotateSumBackend>(), small_options());
  EXPECT_TRUE(failures(results).empty());
  EXPECT_EQ(find_case(results, "N4096/L3/K1/level3/rotate_sum(1,-3,0)"), nullptr);
  EXPECT_NE(find_case(results, "N4096/L3/K1/level3/rotate(5)"), nullptr);
}

TEST(Conformance, UnwrittenRescaleOutputFails) {
  const auto results = run_conformance(std::make_shared<SkipRescaleBackend>(), small_options());
  const auto failed = failures(results);
  ASSERT_FALSE(failed.empty());
  for (const auto& r : failed) EXPECT_TRUE(contains(r.name, "rescale")) << r.name << ": " << r.detail;
  const auto* direct = find_case(results, "N4096/L3/K1/level3/direct:rescale");
  ASSERT_NE(direct, nullptr);
  EXPECT_FALSE(direct->passed);
  EXPECT_TRUE(contains(direct->detail, "never written")) << direct->detail;
  // The Engine's freshly allocated output is poisoned as well.
  const auto* engine = find_case(results, "N4096/L6/K3/level1/rescale");
  ASSERT_NE(engine, nullptr);
  EXPECT_FALSE(engine->passed);
  EXPECT_TRUE(contains(engine->detail, "never written")) << engine->detail;
  EXPECT_TRUE(contains(engine->detail, "8192 of 8192 residues differ")) << engine->detail;
}

TEST(Conformance, BackendExceptionIsAFailedCaseNotACrash) {
  const auto results = run_conformance(std::make_shared<ThrowingNegateBackend>(), small_options());
  const auto failed = failures(results);
  ASSERT_FALSE(failed.empty());
  for (const auto& r : failed) {
    EXPECT_TRUE(contains(r.name, "negate")) << r.name;
    EXPECT_TRUE(contains(r.detail, "simulated device error in negate")) << r.detail;
  }
  EXPECT_NE(find_case(failed, "N4096/L3/K1/level0/negate"), nullptr);
  EXPECT_NE(find_case(failed, "N4096/L3/K1/level0/direct:negate"), nullptr);
}

TEST(Conformance, FilterSelectsCasesBySubstringAndReproducesThem) {
  ConformanceOptions o = small_options();
  o.trials = 2;
  o.filter = "level1/rotate(-3)";
  const auto filtered = run_conformance(cpu::make_cpu_backend({1}), o);
  ASSERT_EQ(filtered.size(), 3u);  // level 1 is tested in each of the three parameter sets
  o.filter = "level1/";
  const auto wider = run_conformance(cpu::make_cpu_backend({1}), o);
  for (const auto& r : filtered) {
    EXPECT_TRUE(contains(r.name, "level1/rotate(-3)")) << r.name;
    EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
    // Same keys, messages and ciphertexts whichever other cases run: same error.
    const auto* same = find_case(wider, r.name);
    ASSERT_NE(same, nullptr) << r.name;
    EXPECT_EQ(same->detail, r.detail);
  }
}

// The 32-bit word family's rational chain: every operation at the top
// (every prime), and at a level of each kind below it: no terminal prime
// (6), t0 only (5), both (4), and level 0.
TEST(Conformance, TheInt32PresetPassesAtEveryKindOfLevel) {
  ConformanceOptions o;
  o.trials = 1;
  o.params = {"slots8192_scale40_levels7_int32"};
  o.levels = {top_level, 6, 5, 4, 0};
  const auto results = run_conformance(cpu::make_cpu_backend({}), o);
  EXPECT_GT(results.size(), 100u);
  for (const auto& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  EXPECT_NE(find_case(results, "slots8192_scale40_levels7_int32/level5/multiply_relinearize_rescale"), nullptr);
  EXPECT_NE(find_case(results, "slots8192_scale40_levels7_int32/level5/mod_raise"), nullptr);
}

// The small 32-bit chain the CUDA tests name ("N<log2 N>_W32") at its top level.
TEST(Conformance, TheSmallInt32ShapePasses) {
  ConformanceOptions o;
  o.trials = 1;
  o.params = {"N11_W32"};
  o.levels = {top_level};
  const auto results = run_conformance(cpu::make_cpu_backend({1}), o);
  EXPECT_GT(results.size(), 50u);
  for (const auto& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  EXPECT_NE(find_case(results, "N2048/W32/level7/multiply_relinearize_rescale"), nullptr);
}

// The options the CUDA tests use, cheaply: a shape with every prime of 44
// bits at its top level, a preset at its lowest, the transform family at
// 2^10 with 44- and 45-bit primes.
TEST(Conformance, NamedParameterSetsLevelsAndTransformsPass) {
  ConformanceOptions o;
  o.trials = 1;
  o.params = {"N11_L3_K2_B44"};
  o.levels = {top_level};
  o.transform_log_n = {10};
  o.transform_bits = {44, 45};
  auto results = run_conformance(cpu::make_cpu_backend({1}), o);
  o.params = {"slots8192_scale40_levels7"};
  o.levels = {parse_level("lowest")};
  o.transform_log_n = {};
  const auto preset = run_conformance(cpu::make_cpu_backend({1}), o);
  results.insert(results.end(), preset.begin(), preset.end());
  for (const auto& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  EXPECT_NE(find_case(results, "N2048/L3/K2/B44/level3/rotate_hoisted(1,5,-3,0,2)"), nullptr);
  EXPECT_NE(find_case(results, "N2048/L3/K2/B44/level3/direct:rescale(3 components)"), nullptr);
  EXPECT_NE(find_case(results, "slots8192_scale40_levels7/level0/direct:rotate_hoisted(1,-3,conjugate)"), nullptr);
  EXPECT_NE(find_case(results, "N1024/L2/K1/B45/limbs1/transform:to_ntt"), nullptr);
  EXPECT_NE(find_case(results, "N1024/L2/K1/B44/limbs3/transform:to_coefficient"), nullptr);
  for (const auto& r : results) {
    EXPECT_TRUE(contains(r.name, "/B44/level3/") || contains(r.name, "/level0/") || contains(r.name, "/transform:"))
        << r.name;
  }
}

// A broken forward transform fails the forward cases only: the inverse ones
// start from the reference's forward result.
TEST(Conformance, CorruptedForwardTransformFailsOnlyForwardTransforms) {
  ConformanceOptions o;
  o.operations = false;
  o.transform_log_n = {10, 11};
  const auto results = run_conformance(std::make_shared<CorruptToNttBackend>(), o);
  ASSERT_EQ(results.size(), 8u);  // 2 ring sizes x 3 and 1 limbs x forward and inverse
  for (const auto& r : results) {
    EXPECT_EQ(r.passed, contains(r.name, "transform:to_coefficient")) << r.name << ": " << r.detail;
  }
  const auto* forward = find_case(results, "N2048/L2/K1/limbs3/transform:to_ntt");
  ASSERT_NE(forward, nullptr);
  EXPECT_TRUE(contains(forward->detail, "1 of 12288 residues differ; first at component 1, limb 2, coefficient 2047"))
      << forward->detail;
}

TEST(Conformance, UnknownParameterSetsAndLevelsAreRefusedByName) {
  const auto backend = cpu::make_cpu_backend({1});
  ConformanceOptions o;
  o.params = {"N12_L3"};
  expect_refused(backend, o, {"'N12_L3'", "N<log2 N>_L<levels>_K<special primes>", "slots8192_scale40_levels7"});
  o.params = {"N12_L3_K1_B70"};
  expect_refused(backend, o, {"'N12_L3_K1_B70'", "70 bits, expected 20..61"});
  o.params = {"N12_L3_K1", "slots8192_scale40_levels7"};
  o.levels = {5};
  expect_refused(backend, o, {"level 5 of parameter set 'N12_L3_K1'", "expected 0..3"});
  o = {};
  o.transform_log_n = {9};
  expect_refused(backend, o, {"transform_log_n", "2^9"});
  EXPECT_EQ(parse_level("top"), top_level);
  EXPECT_EQ(parse_level("middle"), middle_level);
  EXPECT_EQ(parse_level("17"), 17);
  EXPECT_THROW(parse_level("-1"), InvalidArgumentError);
  EXPECT_THROW(parse_level("3x"), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::conformance
