#include "fhelium/circuits/term_parallel.hpp"

#include <algorithm>
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

// Every ranks-th baby step, from `rank`.
std::vector<long> dealt(const std::vector<long>& babies, std::size_t rank, std::size_t ranks) {
  std::vector<long> out;
  for (std::size_t i = rank; i < babies.size(); i += ranks) out.push_back(babies[i]);
  return out;
}

std::string rotation_name(long step) { return "x_rotated_" + std::to_string(step); }

std::unique_ptr<runtime::Executable> linked(runtime::ProgramBuilder& b, const Engine& engine, const GaloisKeys& keys) {
  const runtime::PreparedProgram prepared = b.prepare();
  runtime::Materials materials;
  materials.galois_keys = &keys;
  for (const auto& [name, values] : b.constant_values()) materials.constants[name] = values;
  return std::make_unique<runtime::Executable>(runtime::link(prepared, engine, materials));
}

}  // namespace

std::vector<long> TermParallelTransform::rotation_steps(const LinearTransform& whole, std::size_t rank,
                                                        std::size_t ranks) {
  const LinearTransform part = whole.part(rank, ranks);
  std::vector<long> steps = dealt(whole.baby_steps(), rank, ranks);
  for (long g : part.giant_steps()) steps.push_back(g);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

TermParallelTransform::TermParallelTransform(const LinearTransform& whole, const Engine& engine, const ValueState& x,
                                             const GaloisKeys& keys, std::size_t rank, std::size_t ranks)
    : babies_(whole.baby_steps()),
      own_babies_(dealt(babies_, rank, ranks)),
      rank_(rank),
      ranks_(ranks),
      agreement_(describe_whole(whole, x, ranks)),
      engine_(&engine) {
  const LinearTransform part = whole.part(rank, ranks);
  used_babies_ = part.baby_steps();
  giant_rotations_ = part.giant_steps().size();
  if (!own_babies_.empty()) {
    runtime::ProgramBuilder b(engine.context_ptr(), "term_parallel_rotations_" + std::to_string(rank));
    const std::vector<runtime::ValueRef> rotated = b.rotate_hoisted(b.input("x", x), own_babies_);
    for (std::size_t i = 0; i < own_babies_.size(); ++i) b.output(rotation_name(own_babies_[i]), rotated[i]);
    rotations_ = linked(b, engine, keys);
  }
  runtime::ProgramBuilder b(engine.context_ptr(), "term_parallel_groups_" + std::to_string(rank));
  std::map<long, runtime::ValueRef> rotated{{0, b.input("x", x)}};
  for (long step : used_babies_) rotated[step] = b.input(rotation_name(step), x);
  b.output("y", part.sum_groups(b, rotated));
  groups_ = linked(b, engine, keys);
}

TermParallelTransform::TermParallelTransform(TermParallelTransform&&) noexcept = default;
TermParallelTransform::~TermParallelTransform() = default;

std::size_t TermParallelTransform::key_switches() const { return own_babies_.size() + giant_rotations_; }

Ciphertext TermParallelTransform::apply(runtime::Communicator& communicator, const Ciphertext& x) const {
  if (!agreed_) {
    communicator.check_agreement("the term-parallel transform", agreement_);
    agreed_ = true;
  }
  runtime::ValueTree::Map own;
  if (rotations_) own = rotations_->run(runtime::ValueTree(runtime::ValueTree::Map{{"x", x}})).map();
  // Each baby rotation from its owner to every rank.
  runtime::ValueTree::Map inputs{{"x", x}};
  for (std::size_t i = 0; i < babies_.size(); ++i) {
    const std::string name = rotation_name(babies_[i]);
    const int owner = static_cast<int>(i % ranks_);
    const Ciphertext* mine = owner == static_cast<int>(rank_) ? &own.at(name).ciphertext() : nullptr;
    const Ciphertext received = communicator.broadcast(*engine_, mine, owner);
    if (std::find(used_babies_.begin(), used_babies_.end(), babies_[i]) != used_babies_.end()) {
      inputs.emplace(name, received);
    }
  }
  const runtime::ValueTree out = groups_->run(runtime::ValueTree(std::move(inputs)));
  return engine_->rescale(communicator.all_reduce_sum(*engine_, out.at("y").ciphertext()));
}

}  // namespace fhelium::circuits
