// The YAML pipeline parser: any text may only be refused with an
// fhelium::Error (PipelineError, ParameterError, ...). Relative input files
// resolve in a folder that does not exist.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fhelium/error.hpp"
#include "fhelium/runtime/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)fhelium::runtime::parse_pipeline(text, "<fuzz>", {}, "/nonexistent-fhelium-fuzz-dir");
  } catch (const fhelium::Error&) {
    // A refusal with a message is the expected outcome for most inputs.
  }
  return 0;
}
