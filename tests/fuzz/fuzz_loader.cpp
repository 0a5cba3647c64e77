// One loader of the serialization format, chosen at build time by
// FHELIUM_FUZZ_KIND (an ObjectKind value), fed each input through a seekable
// and an unseekable stream; ciphertexts and relinearization keys also through
// the loader into an engine (the cpu backend: the payload read and checked in
// the value's own memory). A bad input may only throw an fhelium::Error:
// anything else (a crash, another exception, an out-of-bounds read found by
// ASan, a leak, a huge allocation) is a finding.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <streambuf>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/error.hpp"
#include "fhelium/serialization.hpp"
#include "fuzz_context.hpp"

namespace {

using namespace fhelium;

// The input as a stream without a copy; seekable or not, as asked.
class InputBuf : public std::streambuf {
 public:
  InputBuf(const std::uint8_t* data, std::size_t size, bool seekable) : seekable_(seekable) {
    char* begin = const_cast<char*>(reinterpret_cast<const char*>(data));
    setg(begin, begin, begin + size);
  }

 protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
    if (!seekable_ || (which & std::ios_base::in) == 0) return pos_type(off_type(-1));
    const off_type base = dir == std::ios_base::beg   ? 0
                          : dir == std::ios_base::cur ? gptr() - eback()
                                                      : egptr() - eback();
    return seekpos(pos_type(base + off), which);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    if (!seekable_ || (which & std::ios_base::in) == 0 || off_type(pos) < 0 || off_type(pos) > egptr() - eback()) {
      return pos_type(off_type(-1));
    }
    setg(eback(), eback() + off_type(pos), egptr());
    return pos;
  }

 private:
  bool seekable_;
};

const Engine& fuzz_engine() {
  static const Engine engine(fuzz::fuzz_context_ptr(), cpu::make_cpu_backend({1}));
  return engine;
}

// A seekable input into the engine, then back to its start for the host
// loader; an unseekable one is read once, by the host loader.
template <class Load>
void load_into_engine(std::istream& in, Load&& load) {
  if (!in.seekg(0)) {
    in.clear();
    return;
  }
  try {
    load(in, fuzz_engine());
  } catch (const Error&) {
    // A refusal.
  }
  in.clear();
  in.seekg(0);
}

void load(std::istream& in, const Context& ctx) {
  switch (static_cast<ObjectKind>(FHELIUM_FUZZ_KIND)) {
    case ObjectKind::parameters:
      (void)load_context(in);
      break;
    case ObjectKind::plaintext:
      (void)load_plaintext(in, ctx);
      break;
    case ObjectKind::ciphertext:
      load_into_engine(in, [](std::istream& s, const Engine& e) { (void)load_ciphertext(s, e); });
      (void)load_ciphertext(in, ctx);
      break;
    case ObjectKind::public_key:
      (void)load_public_key(in, ctx);
      break;
    case ObjectKind::relinearization_key:
      load_into_engine(in, [](std::istream& s, const Engine& e) { (void)load_relinearization_key(s, e); });
      (void)load_relinearization_key(in, ctx);
      break;
    case ObjectKind::galois_keys: {
      GaloisKeyFile file(in, ctx);
      const auto elements = file.elements();
      for (auto it = elements.rbegin(); it != elements.rend(); ++it) (void)file.load(*it);
      (void)file.load_all();
      break;
    }
    case ObjectKind::secret_key:
      (void)load_secret_key(in, ctx);
      break;
    case ObjectKind::sparse_encapsulation_keys:
      (void)load_sparse_encapsulation_keys(in, ctx);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Context& ctx = fuzz::fuzz_context();
  for (bool seekable : {true, false}) {
    InputBuf buffer(data, size, seekable);
    std::istream in(&buffer);
    try {
      load(in, ctx);
    } catch (const Error&) {
      // A refusal is the expected outcome for most inputs.
    }
  }
  return 0;
}
