// The `fhelium` command-line tool.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "demo.hpp"
#include "fhelium/context.hpp"
#include "fhelium/error.hpp"
#include "fhelium/params.hpp"
#include "fhelium/plugins/loader.hpp"

namespace {

int print_params(const std::string& name) {
  using namespace fhelium;
  const std::vector<std::string> names = name.empty() ? preset_names() : std::vector<std::string>{name};
  for (const auto& n : names) {
    const auto ctx = Context::create(preset(n));
    const auto budget = max_log_qp(ctx->params().secret, ctx->params().security_bits, ctx->ring_degree());
    std::printf("%-30s N=%-6llu slots=%-6llu levels=%-3d Q=%-3zu P=%zu digits=%d log2(QP)=%.1f budget=%d\n",
                n.c_str(), static_cast<unsigned long long>(ctx->ring_degree()),
                static_cast<unsigned long long>(ctx->ring_degree() / 2), ctx->max_level(), ctx->q().size(),
                ctx->p().size(), ctx->key_digits(), ctx->log_qp(), budget.value_or(0));
  }
  return 0;
}

int print_backends() {
  for (const auto& info : fhelium::list_backends()) {
    if (!info.error.empty()) {
      std::printf("%-10s %s\n  error: %s\n", info.name.empty() ? "?" : info.name.c_str(), info.path.c_str(),
                  info.error.c_str());
      continue;
    }
    std::printf("%-10s version %s, ABI %d.%d, %s\n", info.name.c_str(), info.version.c_str(), info.abi_major,
                info.abi_minor, info.path.c_str());
    for (const auto& device : info.devices) std::printf("  %s\n", device.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium: CKKS homomorphic encryption"};
  app.require_subcommand(1);

  fhelium::apps::DemoOptions demo;
  auto* demo_cmd = app.add_subcommand("demo", "Run a small end-to-end calculation on the default backend");
  demo_cmd->add_option("--preset", demo.preset, "Parameter preset");
  demo_cmd->add_option("--backend", demo.backend, "Backend name or plugin path (auto: cuda when available, else cpu)");

  std::string params_name;
  auto* params_cmd = app.add_subcommand("params", "List the presets, or one preset's parameters");
  params_cmd->add_option("preset", params_name, "Preset name");

  auto* backends_cmd = app.add_subcommand("backends", "List the backend plugins found, with versions and devices");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo_cmd) return fhelium::apps::run_demo(demo);
    if (*params_cmd) return print_params(params_name);
    if (*backends_cmd) return print_backends();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fhelium: %s\n", e.what());
    return 2;
  }
  return 0;
}
