// Defaults of the optional Backend capabilities, for synchronous backends.
#include "fhelium/backend/backend.hpp"

#include <vector>

#include "fhelium/error.hpp"

namespace fhelium {

std::shared_ptr<Stream> Backend::create_stream() { return std::make_shared<Stream>(); }
std::shared_ptr<Event> Backend::create_event() { return std::make_shared<Event>(); }

void Backend::record_event(Event&, Stream*) { synchronize(); }
void Backend::wait_event(Stream*, const Event&) {}
void Backend::synchronize_event(const Event&) { synchronize(); }

void Backend::copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream*) {
  std::vector<unsigned char> staging(bytes);
  download(src, staging.data(), bytes);
  upload(dst, staging.data(), bytes);
}

void Backend::begin_capture() {
  throw BackendError("backend '" + name() + "' cannot capture operations (supports_capture() is false)");
}

void Backend::multiply_relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                   const KeyArg& key) {
  const std::size_t words = 3 * static_cast<std::size_t>(a.limbs) * c.context().ring_degree();
  const std::shared_ptr<Buffer> product = allocate(words * word_bytes(c.context().word_size()));
  const PolyArg tensor{product.get(), 3, a.limbs};
  multiply(c, tensor, a, b);
  relinearize(c, out, tensor, key);
}

std::unique_ptr<Recording> Backend::end_capture() {
  throw StateError("backend '" + name() + "' end_capture: no capture is in progress");
}

}  // namespace fhelium
