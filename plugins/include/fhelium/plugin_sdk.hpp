// Header-only SDK for backend authors: turns a C++ `fhelium::Backend` into
// the C table of plugin_abi.h. Include it in exactly one source file of the
// plugin and write
//
//   FHELIUM_DEFINE_BACKEND_PLUGIN("mybackend", "1.0.0", make_my_backend)
//
// where `std::shared_ptr<fhelium::Backend> make_my_backend(int device)`. Every
// exception thrown by the backend is caught here and returned as an error
// object; nothing C++ crosses the boundary. Optionally add
// FHELIUM_DEFINE_BACKEND_PLUGIN_WITH_DEVICES(name, version, factory, describe)
// with `std::string describe(fhelium::Backend&)` (one line per device).
//
// The table always carries the STREAMS extension (ABI 1.1), implemented over
// the Backend virtuals create_stream, create_event, record_event, wait_event,
// synchronize_event, copy, memory_usage, supports_capture, capturing,
// begin_capture and end_capture: a backend that overrides them gets them
// across the boundary, one that does not gets the Backend defaults. The
// COLLECTIVES extension (ABI 1.7) likewise carries has_device_collectives,
// communicator_id and join_communicator.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "fhelium/backend/backend.hpp"
#include "fhelium/context.hpp"
#include "fhelium/error.hpp"
#include "fhelium/plugin_abi.h"

// The opaque handles, defined on the plugin's side only.
struct FheliumError {
  int32_t code;
  std::string message;
};
struct FheliumBackend {
  std::shared_ptr<fhelium::Backend> impl;
};
struct FheliumContext {
  std::shared_ptr<fhelium::BackendContext> impl;
};
struct FheliumBuffer {
  std::shared_ptr<fhelium::Buffer> impl;
};
// Streams, events and recordings keep their backend alive: queued work and
// recorded schedules refer to it. Members are destroyed last to first, so
// `impl` goes (draining its work) before the backend.
struct FheliumStream {
  std::shared_ptr<fhelium::Backend> backend;
  std::shared_ptr<fhelium::Stream> impl;
};
struct FheliumEvent {
  std::shared_ptr<fhelium::Backend> backend;
  std::shared_ptr<fhelium::Event> impl;
};
struct FheliumRecording {
  std::shared_ptr<fhelium::Backend> backend;
  std::unique_ptr<fhelium::Recording> impl;
};
struct FheliumCommunicator {
  std::shared_ptr<fhelium::Backend> backend;
  std::unique_ptr<fhelium::DeviceCommunicator> impl;
};

namespace fhelium::sdk {

using Factory = std::shared_ptr<Backend> (*)(int device);
using Describe = std::string (*)(Backend&);

// Runs `body`; converts any exception into an error object.
template <class Body>
FheliumError* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const InvalidArgumentError& e) {
    return new (std::nothrow) FheliumError{FHELIUM_ERROR_INVALID_ARGUMENT, e.what()};
  } catch (const StateError& e) {
    return new (std::nothrow) FheliumError{FHELIUM_ERROR_STATE, e.what()};
  } catch (const std::bad_alloc&) {
    return new (std::nothrow) FheliumError{FHELIUM_ERROR_OUT_OF_MEMORY, "out of memory"};
  } catch (const BackendError& e) {
    return new (std::nothrow) FheliumError{FHELIUM_ERROR_DEVICE, e.what()};
  } catch (const std::exception& e) {
    return new (std::nothrow) FheliumError{FHELIUM_ERROR_INTERNAL, e.what()};
  } catch (...) {
    return new (std::nothrow) FheliumError{FHELIUM_ERROR_INTERNAL, "unknown exception inside the plugin"};
  }
}

inline FheliumError* invalid(const char* message) {
  return new (std::nothrow) FheliumError{FHELIUM_ERROR_INVALID_ARGUMENT, message};
}

// True when the caller's struct is large enough to hold `field`.
#define FHELIUM_SDK_HAS_FIELD(args, type, field) \
  ((args) != nullptr && (args)->struct_size >= offsetof(type, field) + sizeof((args)->field))

inline PolyArg poly(const FheliumPoly& p) { return {p.buffer ? p.buffer->impl.get() : nullptr, p.components, p.limbs}; }
inline KeyArg key(const FheliumKey& k) { return {k.buffer ? k.buffer->impl.get() : nullptr, k.digits}; }

inline void check_op(const FheliumOpArgs* args) {
  if (!FHELIUM_SDK_HAS_FIELD(args, FheliumOpArgs, count) || args->backend == nullptr || args->context == nullptr) {
    throw InvalidArgumentError("operation arguments are missing or too small for ABI 1.0");
  }
}

template <class Body>
FheliumError* run_op(FheliumOpArgs* args, Body&& body) noexcept {
  return guarded([&] {
    check_op(args);
    body(*args->backend->impl, *args->context->impl, *args);
  });
}

// Checks a STREAMS call's arguments, clears its out fields and runs `body`
// through `guarded`. `needs_backend` is false for the recording functions.
template <class Body>
FheliumError* run_async(FheliumAsyncArgs* args, const char* what, bool needs_backend, Body&& body) noexcept {
  if (!FHELIUM_SDK_HAS_FIELD(args, FheliumAsyncArgs, values)) {
    return guarded(
        [&] { throw InvalidArgumentError(std::string(what) + ": arguments missing or too small for ABI 1.1"); });
  }
  args->stream_out = nullptr;
  args->event_out = nullptr;
  args->recording_out = nullptr;
  args->values[0] = 0;
  args->values[1] = 0;
  return guarded([&] {
    if (needs_backend && (args->backend == nullptr || !args->backend->impl)) {
      throw InvalidArgumentError(std::string(what) + ": no backend");
    }
    body(*args);
  });
}

inline Stream* stream_of(const FheliumAsyncArgs& args) { return args.stream ? args.stream->impl.get() : nullptr; }

inline Event& event_of(const FheliumAsyncArgs& args, const char* what) {
  if (args.event == nullptr || !args.event->impl) throw InvalidArgumentError(std::string(what) + ": no event");
  return *args.event->impl;
}

inline Recording& recording_of(const FheliumAsyncArgs& args, const char* what) {
  if (args.recording == nullptr || !args.recording->impl) {
    throw InvalidArgumentError(std::string(what) + ": no recording");
  }
  return *args.recording->impl;
}

template <Factory F, Describe D>
struct Api {
  static void error_destroy(FheliumError* e) { delete e; }
  static const char* error_message(const FheliumError* e) { return e ? e->message.c_str() : ""; }
  static int32_t error_code(const FheliumError* e) { return e ? e->code : 0; }

  static FheliumError* backend_create(FheliumBackendCreateArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumBackendCreateArgs, backend))
      return invalid("backend_create: bad arguments");
    args->backend = nullptr;
    return guarded([&] {
      auto impl = F(args->device);
      if (!impl) throw BackendError("the backend factory returned nothing");
      args->backend = new FheliumBackend{std::move(impl)};
    });
  }
  static void backend_destroy(FheliumBackend* b) { delete b; }

  static FheliumError* context_create(FheliumContextArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumContextArgs, context) || !args->backend) {
      return invalid("context_create: bad arguments");
    }
    args->context = nullptr;
    return guarded([&] {
      CkksParameters params;
      params.log_ring_degree = args->log_ring_degree;
      params.scale = args->scale;
      params.allow_insecure = true;  // the host has checked the parameters
      if (args->word_bits != 64 && args->word_bits != 32) {
        throw InvalidArgumentError("word size " + std::to_string(args->word_bits) + " bits: expected 32 or 64");
      }
      params.word_size = args->word_bits == 32 ? WordSize::bits32 : WordSize::bits64;
      params.wide_levels = FHELIUM_SDK_HAS_FIELD(args, FheliumContextArgs, wide_levels) ? args->wide_levels : 0;
      const std::vector<u64> q(args->q_primes, args->q_primes + args->q_count);
      const std::vector<u64> p(args->p_primes, args->p_primes + args->p_count);
      auto context = Context::create_with_primes(params, q, p);
      args->context = new FheliumContext{args->backend->impl->prepare(std::move(context))};
    });
  }
  static void context_destroy(FheliumContext* c) { delete c; }

  static FheliumError* buffer_create(FheliumBufferArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumBufferArgs, buffer) || !args->backend) {
      return invalid("buffer_create: bad arguments");
    }
    args->buffer = nullptr;
    return guarded([&] { args->buffer = new FheliumBuffer{args->backend->impl->allocate(args->bytes)}; });
  }
  static void buffer_destroy(FheliumBuffer* b) { delete b; }

  static FheliumError* upload(FheliumTransferArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumTransferArgs, bytes) || !args->backend || !args->buffer) {
      return invalid("upload: bad arguments");
    }
    return guarded([&] { args->backend->impl->upload(*args->buffer->impl, args->host, args->bytes); });
  }
  static FheliumError* upload_filled(FheliumFilledUploadArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumFilledUploadArgs, fill_user) || !args->backend || !args->buffer ||
        !args->fill) {
      return invalid("upload_filled: bad arguments");
    }
    return guarded([&] {
      args->backend->impl->upload_filled(
          *args->buffer->impl, args->bytes, [&](std::span<std::byte> chunk, std::size_t offset) {
            if (args->fill(args->fill_user, chunk.data(), offset, chunk.size()) != 0) {
              throw InvalidArgumentError("upload_filled: the host stopped the upload at byte " +
                                         std::to_string(offset));
            }
          });
    });
  }
  static FheliumError* download(FheliumTransferArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumTransferArgs, bytes) || !args->backend || !args->buffer) {
      return invalid("download: bad arguments");
    }
    return guarded([&] { args->backend->impl->download(*args->buffer->impl, args->host, args->bytes); });
  }
  static FheliumError* synchronize(FheliumBackend* b) {
    if (!b) return invalid("synchronize: no backend");
    return guarded([&] { b->impl->synchronize(); });
  }

  static FheliumError* add(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.add(c, poly(x.out), poly(x.a), poly(x.b));
    });
  }
  static FheliumError* sub(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.sub(c, poly(x.out), poly(x.a), poly(x.b));
    });
  }
  static FheliumError* negate(FheliumOpArgs* a) {
    return run_op(
        a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) { be.negate(c, poly(x.out), poly(x.a)); });
  }
  static FheliumError* add_constant(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.add_constant(c, poly(x.out), poly(x.a), {x.residues, x.residue_count}, x.ntt_domain != 0);
    });
  }
  static FheliumError* multiply_constant(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.multiply_constant(c, poly(x.out), poly(x.a), {x.residues, x.residue_count});
    });
  }
  static FheliumError* multiply_plain(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.multiply_plain(c, poly(x.out), poly(x.a), poly(x.b));
    });
  }
  static FheliumError* multiply(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.multiply(c, poly(x.out), poly(x.a), poly(x.b));
    });
  }
  static FheliumError* to_ntt(FheliumOpArgs* a) {
    return run_op(
        a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) { be.to_ntt(c, poly(x.out), poly(x.a)); });
  }
  static FheliumError* to_coefficient(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.to_coefficient(c, poly(x.out), poly(x.a));
    });
  }
  static FheliumError* rescale(FheliumOpArgs* a) {
    return run_op(
        a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) { be.rescale(c, poly(x.out), poly(x.a)); });
  }
  static FheliumError* drop_limbs(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.drop_limbs(c, poly(x.out), poly(x.a));
    });
  }
  static FheliumError* relinearize(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.relinearize(c, poly(x.out), poly(x.a), key(x.key));
    });
  }
  static FheliumError* multiply_relinearize(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.multiply_relinearize(c, poly(x.out), poly(x.a), poly(x.b), key(x.key));
    });
  }
  static FheliumError* multiply_relinearize_rescale(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.multiply_relinearize_rescale(c, poly(x.out), poly(x.a), poly(x.b), key(x.key));
    });
  }
  static FheliumError* mod_raise(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.mod_raise(c, poly(x.out), poly(x.a));
    });
  }
  static FheliumError* sum_products(FheliumOpArgs* a) {
    if (!FHELIUM_SDK_HAS_FIELD(a, FheliumOpArgs, term_count) || a->terms == nullptr || a->term_count == 0) {
      return invalid("sum_products: bad arguments (no terms)");
    }
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      std::vector<PolyArg> terms, plains;
      for (std::size_t i = 0; i < x.term_count; ++i) {
        terms.push_back(poly(x.terms[i]));
        if (x.plains) plains.push_back(poly(x.plains[i]));
      }
      be.sum_products(c, poly(x.out), terms, plains);
    });
  }
  static FheliumError* sum_constant_products(FheliumOpArgs* a) {
    if (!FHELIUM_SDK_HAS_FIELD(a, FheliumOpArgs, term_count) || a->terms == nullptr || a->term_count == 0 ||
        a->residues == nullptr) {
      return invalid("sum_constant_products: bad arguments (no terms or no residues)");
    }
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      std::vector<PolyArg> terms;
      for (std::size_t i = 0; i < x.term_count; ++i) terms.push_back(poly(x.terms[i]));
      be.sum_constant_products(c, poly(x.out), terms, {x.residues, x.residue_count});
    });
  }
  static FheliumError* sum_product_groups(FheliumOpArgs* a) {
    if (!FHELIUM_SDK_HAS_FIELD(a, FheliumOpArgs, group_ends) || a->terms == nullptr || a->plains == nullptr ||
        a->outs == nullptr || a->group_ends == nullptr || a->count == 0) {
      return invalid("sum_product_groups: bad arguments (no groups, terms, plaintexts or group ends)");
    }
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      std::vector<PolyArg> outs, terms, plains;
      for (std::size_t g = 0; g < x.count; ++g) outs.push_back(poly(x.outs[g]));
      for (std::size_t i = 0; i < x.term_count; ++i) {
        terms.push_back(poly(x.terms[i]));
        plains.push_back(poly(x.plains[i]));
      }
      be.sum_product_groups(c, outs, terms, plains, {x.group_ends, x.count});
    });
  }
  static FheliumError* rotate(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      be.rotate(c, poly(x.out), poly(x.a), x.galois_element, key(x.key));
    });
  }
  static FheliumError* rotate_hoisted(FheliumOpArgs* a) {
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      std::vector<PolyArg> outs;
      std::vector<KeyArg> keys;
      for (std::size_t i = 0; i < x.count; ++i) {
        outs.push_back(poly(x.outs[i]));
        keys.push_back(key(x.keys[i]));
      }
      be.rotate_hoisted(c, outs, poly(x.a), {x.galois_elements, x.count}, keys);
    });
  }

  static FheliumError* rotate_sum(FheliumOpArgs* a) {
    if (a->term_count == 0 && a->backend != nullptr && a->backend->impl) {  // the probe
      return a->backend->impl->supports_rotate_sum() ? nullptr : invalid("rotate_sum: not implemented");
    }
    if (a->terms == nullptr || a->galois_elements == nullptr || a->keys == nullptr || a->term_count == 0 ||
        a->count != a->term_count) {
      return invalid("rotate_sum: bad arguments (no terms, Galois elements or keys, or unequal counts)");
    }
    return run_op(a, [](Backend& be, const BackendContext& c, const FheliumOpArgs& x) {
      std::vector<PolyArg> terms;
      std::vector<KeyArg> keys;
      for (std::size_t i = 0; i < x.term_count; ++i) {
        terms.push_back(poly(x.terms[i]));
        keys.push_back(key(x.keys[i]));
      }
      be.rotate_sum(c, poly(x.out), terms, {x.galois_elements, x.count}, keys);
    });
  }

  static FheliumError* describe_devices(FheliumDeviceInfoArgs* args) {
    if (!FHELIUM_SDK_HAS_FIELD(args, FheliumDeviceInfoArgs, capacity) || !args->backend || !args->text) {
      return invalid("describe_devices: bad arguments");
    }
    return guarded([&] {
      std::string text;
      if constexpr (D != nullptr) text = D(*args->backend->impl);
      const std::size_t n = std::min(text.size(), args->capacity - 1);
      std::memcpy(args->text, text.data(), n);
      args->text[n] = '\0';
    });
  }

  // The STREAMS extension (ABI 1.1), over the Backend virtuals.
  static FheliumError* stream_create(FheliumAsyncArgs* args) {
    return run_async(args, "stream_create", true, [](FheliumAsyncArgs& a) {
      auto stream = a.backend->impl->create_stream();
      if (!stream) throw BackendError("create_stream returned nothing");
      a.stream_out = new FheliumStream{a.backend->impl, std::move(stream)};
    });
  }
  static void stream_destroy(FheliumStream* s) { delete s; }
  static FheliumError* event_create(FheliumAsyncArgs* args) {
    return run_async(args, "event_create", true, [](FheliumAsyncArgs& a) {
      auto event = a.backend->impl->create_event();
      if (!event) throw BackendError("create_event returned nothing");
      a.event_out = new FheliumEvent{a.backend->impl, std::move(event)};
    });
  }
  static void event_destroy(FheliumEvent* e) { delete e; }
  static FheliumError* event_create_timing(FheliumAsyncArgs* args) {
    return run_async(args, "event_create_timing", true, [](FheliumAsyncArgs& a) {
      auto event = a.backend->impl->create_timing_event();
      if (!event) throw BackendError("create_timing_event returned nothing");
      a.event_out = new FheliumEvent{a.backend->impl, std::move(event)};
    });
  }
  static FheliumError* event_elapsed(FheliumAsyncArgs* args) {
    return run_async(args, "event_elapsed", true, [args](FheliumAsyncArgs& a) {
      if (!FHELIUM_SDK_HAS_FIELD(args, FheliumAsyncArgs, end_event) || a.end_event == nullptr || !a.end_event->impl) {
        throw InvalidArgumentError("event_elapsed: no end event (end_event, ABI 1.5)");
      }
      const double seconds = a.backend->impl->elapsed_seconds(event_of(a, "event_elapsed"), *a.end_event->impl);
      a.values[0] = static_cast<std::uint64_t>(std::llround(std::max(seconds, 0.0) * 1e9));
    });
  }
  static FheliumError* event_record(FheliumAsyncArgs* args) {
    return run_async(args, "event_record", true, [](FheliumAsyncArgs& a) {
      a.backend->impl->record_event(event_of(a, "event_record"), stream_of(a));
    });
  }
  static FheliumError* stream_wait_event(FheliumAsyncArgs* args) {
    return run_async(args, "stream_wait_event", true, [](FheliumAsyncArgs& a) {
      a.backend->impl->wait_event(stream_of(a), event_of(a, "stream_wait_event"));
    });
  }
  static FheliumError* event_synchronize(FheliumAsyncArgs* args) {
    return run_async(args, "event_synchronize", true,
                     [](FheliumAsyncArgs& a) { a.backend->impl->synchronize_event(event_of(a, "event_synchronize")); });
  }
  static FheliumError* copy(FheliumAsyncArgs* args) {
    return run_async(args, "copy", true, [](FheliumAsyncArgs& a) {
      if (a.dst == nullptr || a.src == nullptr || !a.dst->impl || !a.src->impl) {
        throw InvalidArgumentError("copy: a source and a destination buffer are required");
      }
      a.backend->impl->copy(*a.dst->impl, *a.src->impl, a.bytes, stream_of(a));
    });
  }
  static FheliumError* memory_usage(FheliumAsyncArgs* args) {
    return run_async(args, "memory_usage", true, [](FheliumAsyncArgs& a) {
      const MemoryUsage m = a.backend->impl->memory_usage();
      a.values[0] = m.current_bytes;
      a.values[1] = m.peak_bytes;
    });
  }
  static FheliumError* capture_query(FheliumAsyncArgs* args) {
    return run_async(args, "capture_query", true, [](FheliumAsyncArgs& a) {
      a.values[0] = a.backend->impl->supports_capture() ? 1 : 0;
      a.values[1] = a.backend->impl->capturing() ? 1 : 0;
    });
  }
  static FheliumError* capture_begin(FheliumAsyncArgs* args) {
    return run_async(args, "capture_begin", true, [](FheliumAsyncArgs& a) { a.backend->impl->begin_capture(); });
  }
  static FheliumError* capture_end(FheliumAsyncArgs* args) {
    return run_async(args, "capture_end", true, [](FheliumAsyncArgs& a) {
      auto handle = std::make_unique<FheliumRecording>();
      handle->backend = a.backend->impl;
      handle->impl = a.backend->impl->end_capture();
      if (!handle->impl) throw BackendError("end_capture returned nothing");
      a.recording_out = handle.release();
    });
  }
  static FheliumError* recording_launch(FheliumAsyncArgs* args) {
    return run_async(args, "recording_launch", false,
                     [](FheliumAsyncArgs& a) { recording_of(a, "recording_launch").launch(); });
  }
  static FheliumError* recording_info(FheliumAsyncArgs* args) {
    return run_async(args, "recording_info", false, [](FheliumAsyncArgs& a) {
      const Recording& r = recording_of(a, "recording_info");
      a.values[0] = r.memory_bytes();
      a.values[1] = r.operation_count();
    });
  }
  static void recording_destroy(FheliumRecording* r) { delete r; }

  // ---- COLLECTIVES (ABI 1.7) ----

  template <class Body>
  static FheliumError* run_collective(FheliumCollectiveArgs* args, const char* what, Body&& body) noexcept {
    return guarded([&] {
      if (!FHELIUM_SDK_HAS_FIELD(args, FheliumCollectiveArgs, available)) {
        throw InvalidArgumentError(std::string(what) + ": arguments missing or too small for ABI 1.7");
      }
      body(*args);
    });
  }
  static DeviceCommunicator& communicator_of(const FheliumCollectiveArgs& a, const char* what) {
    if (a.communicator == nullptr || !a.communicator->impl) {
      throw InvalidArgumentError(std::string(what) + ": no communicator");
    }
    return *a.communicator->impl;
  }
  static FheliumError* communicator_id(FheliumCollectiveArgs* args) {
    return run_collective(args, "communicator_id", [](FheliumCollectiveArgs& a) {
      if (a.backend == nullptr) throw InvalidArgumentError("communicator_id: no backend");
      a.available = a.backend->impl->has_device_collectives() ? 1 : 0;
      if (a.query_only || !a.available) return;
      const std::optional<CommunicatorId> id = a.backend->impl->communicator_id();
      a.available = id ? 1 : 0;
      if (id) std::memcpy(a.id, id->data(), id->size());
    });
  }
  static FheliumError* communicator_join(FheliumCollectiveArgs* args) {
    return run_collective(args, "communicator_join", [](FheliumCollectiveArgs& a) {
      if (a.backend == nullptr) throw InvalidArgumentError("communicator_join: no backend");
      CommunicatorId id;
      std::memcpy(id.data(), a.id, id.size());
      auto handle = std::make_unique<FheliumCommunicator>();
      handle->backend = a.backend->impl;
      handle->impl = a.backend->impl->join_communicator(id, a.ranks, a.rank, std::chrono::milliseconds(a.timeout_ms));
      if (!handle->impl) throw BackendError("join_communicator returned nothing");
      a.communicator = handle.release();
    });
  }
  static void communicator_destroy(FheliumCommunicator* c) { delete c; }
  static FheliumError* broadcast(FheliumCollectiveArgs* args) {
    return run_collective(args, "broadcast", [](FheliumCollectiveArgs& a) {
      if (a.buffer == nullptr || !a.buffer->impl) throw InvalidArgumentError("broadcast: no buffer");
      communicator_of(a, "broadcast").broadcast(*a.buffer->impl, a.bytes, a.root);
    });
  }
  static FheliumError* group_begin(FheliumCollectiveArgs* args) {
    return run_collective(args, "group_begin",
                          [](FheliumCollectiveArgs& a) { communicator_of(a, "group_begin").group_begin(); });
  }
  static FheliumError* group_end(FheliumCollectiveArgs* args) {
    return run_collective(args, "group_end",
                          [](FheliumCollectiveArgs& a) { communicator_of(a, "group_end").group_end(); });
  }

  static const FheliumBackendApi* table(const char* name, const char* version) {
    static const FheliumCollectivesExtension collectives{
        {sizeof(FheliumCollectivesExtension), FHELIUM_EXTENSION_COLLECTIVES, nullptr},
        &communicator_id,
        &communicator_join,
        &communicator_destroy,
        &broadcast,
        &group_begin,
        &group_end};
    static const FheliumStreamsExtension streams{
        {sizeof(FheliumStreamsExtension), FHELIUM_EXTENSION_STREAMS, &collectives.base},
        &stream_create,
        &stream_destroy,
        &event_create,
        &event_destroy,
        &event_record,
        &stream_wait_event,
        &event_synchronize,
        &copy,
        &memory_usage,
        &capture_query,
        &capture_begin,
        &capture_end,
        &recording_launch,
        &recording_info,
        &recording_destroy,
        &event_create_timing,
        &event_elapsed};
    static const FheliumDeviceInfoExtension device_info{
        {sizeof(FheliumDeviceInfoExtension), FHELIUM_EXTENSION_DEVICE_INFO, &streams.base}, &describe_devices};
    static const FheliumBackendApi api{sizeof(FheliumBackendApi),
                                       &device_info.base,
                                       FHELIUM_ABI_MAJOR,
                                       FHELIUM_ABI_MINOR,
                                       name,
                                       version,
                                       &error_destroy,
                                       &error_message,
                                       &error_code,
                                       &backend_create,
                                       &backend_destroy,
                                       &context_create,
                                       &context_destroy,
                                       &buffer_create,
                                       &buffer_destroy,
                                       &upload,
                                       &download,
                                       &synchronize,
                                       &add,
                                       &sub,
                                       &negate,
                                       &add_constant,
                                       &multiply_constant,
                                       &multiply_plain,
                                       &multiply,
                                       &to_ntt,
                                       &to_coefficient,
                                       &rescale,
                                       &drop_limbs,
                                       &relinearize,
                                       &rotate,
                                       &rotate_hoisted,
                                       &multiply_relinearize,
                                       &mod_raise,
                                       &upload_filled,
                                       &sum_products,
                                       &sum_constant_products,
                                       &sum_product_groups,
                                       &multiply_relinearize_rescale,
                                       &rotate_sum};
    return &api;
  }
};

}  // namespace fhelium::sdk

#define FHELIUM_DEFINE_BACKEND_PLUGIN_WITH_DEVICES(NAME, VERSION, FACTORY, DESCRIBE)                     \
  extern "C" __attribute__((visibility("default"))) const FheliumBackendApi* fhelium_backend_api(void) { \
    return ::fhelium::sdk::Api<FACTORY, DESCRIBE>::table(NAME, VERSION);                                 \
  }

#define FHELIUM_DEFINE_BACKEND_PLUGIN(NAME, VERSION, FACTORY) \
  FHELIUM_DEFINE_BACKEND_PLUGIN_WITH_DEVICES(NAME, VERSION, FACTORY, nullptr)
