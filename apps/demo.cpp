#include "demo.hpp"

#include <cstdio>

#include "backend_choice.hpp"
#include "fhelium/runtime/pipeline.hpp"

namespace fhelium::apps {

// The demo is a small built-in pipeline (`fhelium demo --show-pipeline` prints it).
const char* demo_pipeline() {
  return R"(# fhelium demo: a small end-to-end pipeline, checked against double precision.
name: demo
description: x * y, rotate(x, 1), (x * y)^2 and exp(x) to third order on encrypted vectors
backend: auto
params: slots8192_scale40_levels7
inputs:
  x: {random: {distribution: uniform, range: [-1, 1], length: 8192, seed: 2026}}
  y: {random: {distribution: uniform, range: [-1, 1], length: 8192, seed: 2027}}
steps:
  - {name: xy, op: multiply_relinearize_rescale, args: [x, y]}
  - {name: rx, op: rotate, args: [x], step: 1}
  - {name: xy2, op: multiply_relinearize_rescale, args: [xy, xy]}
  - {name: exp3, op: polynomial, args: [x], coefficients: [1, 1, 0.5, 0.16666666666666666]}
execution: {mode: eager}
outputs:
  values:
    - {value: xy, max_error: 1.0e-4}
    - {value: rx, max_error: 1.0e-4}
    - {value: xy2, max_error: 1.0e-4}
    - {value: exp3, max_error: 1.0e-4}
)";
}

int run_demo(const DemoOptions& options) {
  if (options.show_pipeline) {
    std::printf("%s", demo_pipeline());
    return 0;
  }
  using namespace runtime;
  const PipelineSpec spec = parse_pipeline(demo_pipeline(), "<demo>", {"params=" + options.preset});
  ChosenBackend chosen;
  RunOptions run;
  run.write_files = false;
  run.backend_factory = [&](const BackendSpec& b) {
    chosen = choose_backend(options.backend, b.device);
    if (!chosen.note.empty()) std::printf("%s\n", chosen.note.c_str());
    return chosen.backend;
  };
  const PipelineReport r = run_pipeline(spec, run);
  std::printf("FHElium demo: preset %s (N = %llu, %d levels, log2(QP) = %.1f), backend %s\n", options.preset.c_str(),
              static_cast<unsigned long long>(r.parameters.ring_degree()), r.parameters.max_level(), r.log_qp,
              r.backend.c_str());
  const char* descriptions[] = {"x * y (multiply, relinearize, rescale)", "rotate(x, 1)", "(x * y)^2",
                                "1 + x + x^2/2 + x^3/6 (polynomial)"};
  for (std::size_t i = 0; i < r.outputs.size(); ++i) {
    const OutputReport& o = r.outputs[i];
    std::printf("  %-40s level %d  max error %.3e  (bound %.3g)\n", i < 4 ? descriptions[i] : o.name.c_str(), o.level,
                o.error.max, o.bound.value_or(0));
  }
  std::printf("%s in %.2f s\n", r.ok ? "all errors within bounds" : "ERROR: an error exceeds its bound",
              r.wall_seconds);
  return r.ok ? 0 : 1;
}

}  // namespace fhelium::apps
