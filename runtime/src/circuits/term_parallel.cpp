#include "fhelium/circuits/term_parallel.hpp"

#include <cmath>
#include <sstream>

#include "fhelium/error.hpp"

namespace fhelium::circuits {

namespace {
std::string describe_whole(const LinearTransform& whole, const ValueState& x, std::size_t ranks) {
  std::ostringstream s;
  s << "ranks " << ranks << ", slots " << whole.slots() << ", periods " << whole.input_period() << " -> "
    << whole.output_period() << ", baby step " << whole.baby_step() << ", diagonals";
  for (long k : whole.diagonal_indices()) s << ' ' << k;
  s << ", input level " << x.level << " scale 2^" << std::log2(x.scale);
  return s.str();
}
}  // namespace

TermParallelTransform::TermParallelTransform(const LinearTransform& whole, const Engine& engine, const ValueState& x,
                                             const GaloisKeys& keys, std::size_t rank, std::size_t ranks)
    : part_(whole.part(rank, ranks)), agreement_(describe_whole(whole, x, ranks)), engine_(&engine) {
  runtime::ProgramBuilder b(engine.context_ptr(), "term_parallel_part_" + std::to_string(rank));
  b.output("y", part_.apply_unrescaled(b, b.input("x", x)));
  const runtime::PreparedProgram prepared = b.prepare();
  runtime::Materials materials;
  materials.galois_keys = &keys;
  for (const auto& [name, values] : b.constant_values()) materials.constants[name] = values;
  executable_ = std::make_unique<runtime::Executable>(runtime::link(prepared, engine, materials));
}

TermParallelTransform::TermParallelTransform(TermParallelTransform&&) noexcept = default;
TermParallelTransform::~TermParallelTransform() = default;

Ciphertext TermParallelTransform::apply(runtime::Communicator& communicator, const Ciphertext& x) const {
  if (!agreed_) {
    communicator.check_agreement("the term-parallel transform", agreement_);
    agreed_ = true;
  }
  const runtime::ValueTree out = executable_->run(runtime::ValueTree(runtime::ValueTree::Map{{"x", x}}));
  return engine_->rescale(communicator.all_reduce_sum(*engine_, out.at("y").ciphertext()));
}

}  // namespace fhelium::circuits
