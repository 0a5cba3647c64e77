/* The FHElium backend plugin ABI (pure C).
 *
 * A plugin is a shared library that exports exactly one symbol:
 *
 *     const FheliumBackendApi* fhelium_backend_api(void);
 *
 * It returns a table of C functions that stays valid while the library is
 * loaded. Versioning rules:
 *  - FHELIUM_ABI_MAJOR changes when anything existing changes meaning or
 *    layout; the host refuses a plugin of another major version.
 *  - FHELIUM_ABI_MINOR grows when fields or functions are appended; a plugin
 *    of a newer minor version loads (the host ignores what it does not know),
 *    and a host reading an older table checks struct_size before using a field.
 *  - Every struct begins with `struct_size` (the sender's sizeof) and is
 *    append-only; receivers check `struct_size >= offsetof(field) + sizeof`.
 *  - New optional capabilities come as new extension types (see
 *    FheliumExtension); a host finds the ones it knows by walking the chain.
 *
 * History: 1.0 the table and FHELIUM_EXTENSION_DEVICE_INFO; 1.1 adds
 * FHELIUM_EXTENSION_STREAMS (streams, events, copies, memory usage, capture);
 * 1.2 appends multiply_relinearize to the table; 1.3 appends mod_raise; 1.4
 * appends upload_filled; 1.5 appends timing events to the STREAMS extension
 * (event_create_timing, event_elapsed) and end_event to FheliumAsyncArgs;
 * 1.6 stores a 32-bit context's residues in 4-byte words (word_bits 32): the
 * host gives a 32-bit context only to plugins of 1.6 or later; 1.7 adds
 * FHELIUM_EXTENSION_COLLECTIVES (device-to-device broadcasts between ranks);
 * 1.8 appends wide_levels to FheliumContextArgs (the 32-bit chain's levels of
 * two primes each above its rational chain) and lets a 32-bit level 0 of two primes reach
 * mod_raise: the host gives a context with wide levels, or a 32-bit chain of
 * level 0 only, only to plugins of 1.8 or later, and lifts a two-prime
 * level 0 itself for older ones; 1.9 appends sum_products to the table and
 * its operands (terms, plains, term_count) to FheliumOpArgs; 1.10 appends
 * sum_constant_products to the table; 1.11 appends sum_product_groups to the
 * table and group_ends to FheliumOpArgs; 1.12 appends
 * multiply_relinearize_rescale to the table; 1.13 appends rotate_sum.
 *
 * Ownership and lifetime: every handle returned by a create/allocate function
 * is owned by the caller and released with the matching destroy function.
 * Errors are returned as FheliumError objects (NULL means success), owned by
 * the caller and freed with `error_destroy`. No C++ exception, RTTI object or
 * std:: type crosses this boundary: plugins catch everything.
 */
#ifndef FHELIUM_PLUGIN_ABI_H
#define FHELIUM_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FHELIUM_ABI_MAJOR 1
#define FHELIUM_ABI_MINOR 13
#define FHELIUM_ENTRY_SYMBOL "fhelium_backend_api"

/* Returned by the plugin, owned by the caller: free with error_destroy. */
typedef struct FheliumError FheliumError;
/* Opaque handles, each released by its destroy function. */
typedef struct FheliumBackend FheliumBackend;       /* one backend instance */
typedef struct FheliumContext FheliumContext;       /* tables for one CKKS context */
typedef struct FheliumBuffer FheliumBuffer;         /* backend memory */
/* Since ABI 1.1 (FHELIUM_EXTENSION_STREAMS): */
typedef struct FheliumStream FheliumStream;         /* an ordering queue (a CUDA stream) */
typedef struct FheliumEvent FheliumEvent;           /* a point in a stream's work */
typedef struct FheliumRecording FheliumRecording;   /* a captured schedule (a CUDA Graph) */
/* Since ABI 1.7 (FHELIUM_EXTENSION_COLLECTIVES): */
typedef struct FheliumCommunicator FheliumCommunicator; /* one rank's collectives (an NCCL communicator) */

typedef enum FheliumErrorCode {
  FHELIUM_ERROR_INVALID_ARGUMENT = 1,
  FHELIUM_ERROR_STATE = 2,
  FHELIUM_ERROR_OUT_OF_MEMORY = 3,
  FHELIUM_ERROR_DEVICE = 4,
  FHELIUM_ERROR_UNIMPLEMENTED = 5,
  FHELIUM_ERROR_INTERNAL = 6
} FheliumErrorCode;

/* Optional capabilities are extensions chained from FheliumBackendApi. */
typedef enum FheliumExtensionType {
  FHELIUM_EXTENSION_DEVICE_INFO = 1,
  FHELIUM_EXTENSION_STREAMS = 2,   /* since ABI 1.1 */
  FHELIUM_EXTENSION_COLLECTIVES = 3 /* since ABI 1.7 */
} FheliumExtensionType;

typedef struct FheliumExtension {
  size_t struct_size;
  FheliumExtensionType type;
  const struct FheliumExtension* next; /* NULL ends the chain */
} FheliumExtension;

typedef struct FheliumBackendCreateArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  int32_t device;                  /* device index; plugins without devices accept 0 */
  FheliumBackend* backend;         /* out: owned by the caller (backend_destroy) */
} FheliumBackendCreateArgs;

/* The CKKS context as primes; the plugin rebuilds its tables from them. */
typedef struct FheliumContextArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  int32_t log_ring_degree;
  int32_t word_bits;               /* 64, or 32: the Q primes are then the rational chain's and every
                                      residue in a buffer takes 4 bytes instead of 8 (ABI 1.6) */
  const uint64_t* q_primes;        /* borrowed for the call */
  int32_t q_count;
  const uint64_t* p_primes;        /* borrowed for the call */
  int32_t p_count;
  double scale;
  FheliumContext* context;         /* out: owned by the caller (context_destroy) */
  int32_t wide_levels;             /* word_bits 32: the last 2 x wide_levels Q primes are levels of two
                                      primes each (CkksParameters::wide_levels; ABI 1.8) */
} FheliumContextArgs;

typedef struct FheliumBufferArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  size_t bytes;
  FheliumBuffer* buffer;           /* out: owned by the caller (buffer_destroy) */
} FheliumBufferArgs;

typedef struct FheliumTransferArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  FheliumBuffer* buffer;
  void* host;                      /* upload: read from; download: written to */
  size_t bytes;
} FheliumTransferArgs;

/* A `components x limbs x N` residue array held in a buffer. */
typedef struct FheliumPoly {
  FheliumBuffer* buffer;           /* borrowed */
  int32_t components;
  int32_t limbs;
} FheliumPoly;

typedef struct FheliumKey {
  FheliumBuffer* buffer;           /* borrowed; digits x 2 x key_limbs x N */
  int32_t digits;
} FheliumKey;

/* One argument struct serves every operation; each op documents the fields
 * it reads (see FheliumBackendApi). */
typedef struct FheliumOpArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  FheliumContext* context;
  FheliumPoly out;
  FheliumPoly a;
  FheliumPoly b;
  const uint64_t* residues;        /* one per limb, borrowed */
  size_t residue_count;
  int32_t ntt_domain;              /* add_constant: 1 in the NTT domain */
  uint32_t galois_element;         /* rotate */
  FheliumKey key;                  /* relinearize, rotate */
  /* rotate_hoisted: `count` outputs, elements and keys (all borrowed). */
  const FheliumPoly* outs;
  const uint32_t* galois_elements;
  const FheliumKey* keys;
  size_t count;
  /* ABI 1.9, sum_products: `term_count` ciphertexts and as many one-component
   * plaintexts, or plains NULL for a plain sum (all borrowed). */
  const FheliumPoly* terms;
  const FheliumPoly* plains;
  size_t term_count;
  /* ABI 1.11, sum_product_groups: group g's terms end at group_ends[g]
   * (`count` groups, borrowed). */
  const size_t* group_ends;
} FheliumOpArgs;

typedef struct FheliumDeviceInfoArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  char* text;                      /* out: written, NUL-terminated, up to capacity */
  size_t capacity;
} FheliumDeviceInfoArgs;

/* FHELIUM_EXTENSION_DEVICE_INFO: one line per device of a backend. */
typedef struct FheliumDeviceInfoExtension {
  FheliumExtension base;
  FheliumError* (*describe_devices)(FheliumDeviceInfoArgs* args);
} FheliumDeviceInfoExtension;

/* ABI 1.1. One argument struct serves every function of the STREAMS
 * extension; each function documents the fields it reads and writes. The out
 * fields are cleared (NULL / 0) by the plugin before it does anything else. */
typedef struct FheliumAsyncArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  FheliumStream* stream;           /* NULL: the backend's own stream */
  FheliumEvent* event;
  FheliumBuffer* dst;
  FheliumBuffer* src;
  size_t bytes;
  FheliumRecording* recording;
  /* out: */
  FheliumStream* stream_out;       /* owned by the caller (stream_destroy) */
  FheliumEvent* event_out;         /* owned by the caller (event_destroy) */
  FheliumRecording* recording_out; /* owned by the caller (recording_destroy) */
  uint64_t values[2];
  /* Since ABI 1.5: */
  FheliumEvent* end_event;         /* event_elapsed: the later event */
} FheliumAsyncArgs;

/* FHELIUM_EXTENSION_STREAMS (ABI 1.1): streams, events, device-side copies,
 * memory usage and capture of operations into replayable recordings. Each
 * function mirrors the fhelium::Backend virtual of the same meaning
 * (core/include/fhelium/backend/backend.hpp). Every function reads `backend`
 * (recording_launch and recording_info need only `recording`).
 *
 * Handles are owned by the caller and released with their destroy function;
 * a stream or event is used only with the backend that created it. A
 * recording references the backend that captured it (and the buffers used
 * during the capture): destroy it before that backend. While a capture is in
 * progress, stream/event calls, upload, download, synchronize and
 * context_create fail with FHELIUM_ERROR_STATE; the capture continues. */
typedef struct FheliumStreamsExtension {
  FheliumExtension base;
  /* out: stream_out, a new stream. */
  FheliumError* (*stream_create)(FheliumAsyncArgs* args);
  void (*stream_destroy)(FheliumStream* stream);
  /* out: event_out, a new event (complete until recorded). */
  FheliumError* (*event_create)(FheliumAsyncArgs* args);
  void (*event_destroy)(FheliumEvent* event);
  /* event, stream: marks the current end of the stream's work. */
  FheliumError* (*event_record)(FheliumAsyncArgs* args);
  /* stream, event: work issued to the stream afterwards waits for the event;
   * the host does not wait. */
  FheliumError* (*stream_wait_event)(FheliumAsyncArgs* args);
  /* event: the host waits for the event. */
  FheliumError* (*event_synchronize)(FheliumAsyncArgs* args);
  /* dst, src, bytes, stream: copies bytes from src to dst, ordered on the
   * stream (recorded when capturing). */
  FheliumError* (*copy)(FheliumAsyncArgs* args);
  /* out: values[0] = bytes of backend memory in use, values[1] = peak. */
  FheliumError* (*memory_usage)(FheliumAsyncArgs* args);
  /* out: values[0] = 1 if the backend can capture, values[1] = 1 while capturing. */
  FheliumError* (*capture_query)(FheliumAsyncArgs* args);
  /* Operations and copies issued from now on are recorded, not run. Buffers
   * created meanwhile belong to the recording. */
  FheliumError* (*capture_begin)(FheliumAsyncArgs* args);
  /* Ends the capture. out: recording_out, the captured schedule. */
  FheliumError* (*capture_end)(FheliumAsyncArgs* args);
  /* recording: enqueues one replay on the backend's stream; the host does not wait. */
  FheliumError* (*recording_launch)(FheliumAsyncArgs* args);
  /* recording. out: values[0] = backend memory the recording holds (bytes),
   * values[1] = operations recorded. */
  FheliumError* (*recording_info)(FheliumAsyncArgs* args);
  void (*recording_destroy)(FheliumRecording* recording);
  /* Since ABI 1.5 (a host reads these only when base.struct_size covers them). */
  /* out: event_out, a new event that can also time work (event_elapsed). */
  FheliumError* (*event_create_timing)(FheliumAsyncArgs* args);
  /* event (the start), end_event: both from event_create_timing and recorded;
   * waits for end_event. out: values[0] = nanoseconds of the backend's work
   * between them, on the backend's own clock. */
  FheliumError* (*event_elapsed)(FheliumAsyncArgs* args);
} FheliumStreamsExtension;

typedef struct FheliumCollectiveArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  uint8_t id[128];                   /* communicator_id: out; communicator_join: in */
  int32_t ranks;                     /* communicator_join */
  int32_t rank;                      /* communicator_join */
  uint64_t timeout_ms;               /* communicator_join: fail after this long */
  FheliumCommunicator* communicator; /* communicator_join: out; the others: in */
  FheliumBuffer* buffer;             /* broadcast */
  size_t bytes;                      /* broadcast */
  int32_t root;                      /* broadcast */
  int32_t query_only;                /* communicator_id: 1 to ask only whether there are collectives */
  int32_t available;                 /* communicator_id: out, 1 when there are (and, unless query_only, id holds one) */
} FheliumCollectiveArgs;

/* FHELIUM_EXTENSION_COLLECTIVES (ABI 1.7): device-to-device collectives
 * between backends of this plugin, one per rank, mirroring
 * fhelium::Backend::communicator_id / join_communicator and
 * fhelium::DeviceCommunicator. Every rank calls the same collectives in the
 * same order. */
typedef struct FheliumCollectivesExtension {
  FheliumExtension base;
  /* backend, query_only. out: available; unless query_only and when
   * available, id naming a new communicator (made by one rank). A backend
   * without collectives returns success with available = 0. */
  FheliumError* (*communicator_id)(FheliumCollectiveArgs* args);
  /* backend, id, ranks, rank, timeout_ms: returns once every rank has
   * joined. out: communicator, owned by the caller (communicator_destroy). */
  FheliumError* (*communicator_join)(FheliumCollectiveArgs* args);
  void (*communicator_destroy)(FheliumCommunicator* communicator);
  /* communicator, buffer, bytes, root: the root's bytes into every rank's
   * buffer, ordered on the backend's stream. */
  FheliumError* (*broadcast)(FheliumCollectiveArgs* args);
  /* communicator: the collectives between them are issued as one. */
  FheliumError* (*group_begin)(FheliumCollectiveArgs* args);
  FheliumError* (*group_end)(FheliumCollectiveArgs* args);
} FheliumCollectivesExtension;

typedef FheliumError* (*FheliumOpFn)(FheliumOpArgs* args);

/* ABI 1.4 (upload_filled). Writes bytes [offset, offset + bytes) of the value
 * into `chunk`; returns 0, or non-zero to stop the upload (the host keeps the
 * reason). */
typedef int32_t (*FheliumFillFn)(void* user, void* chunk, size_t offset, size_t bytes);

typedef struct FheliumFilledUploadArgs {
  size_t struct_size;
  const FheliumExtension* extension_start;
  FheliumBackend* backend;
  FheliumBuffer* buffer;
  size_t bytes;
  FheliumFillFn fill;
  void* fill_user;                 /* passed to fill unchanged */
} FheliumFilledUploadArgs;

typedef struct FheliumBackendApi {
  size_t struct_size;
  const FheliumExtension* extension_start;
  int32_t abi_major;
  int32_t abi_minor;
  const char* name;                /* static, e.g. "cpu" */
  const char* version;             /* static, the plugin's own version */

  void (*error_destroy)(FheliumError* error);
  const char* (*error_message)(const FheliumError* error);  /* valid until destroyed */
  int32_t (*error_code)(const FheliumError* error);         /* a FheliumErrorCode */

  FheliumError* (*backend_create)(FheliumBackendCreateArgs* args);
  void (*backend_destroy)(FheliumBackend* backend);
  FheliumError* (*context_create)(FheliumContextArgs* args);
  void (*context_destroy)(FheliumContext* context);
  FheliumError* (*buffer_create)(FheliumBufferArgs* args);
  void (*buffer_destroy)(FheliumBuffer* buffer);
  FheliumError* (*upload)(FheliumTransferArgs* args);
  FheliumError* (*download)(FheliumTransferArgs* args);
  FheliumError* (*synchronize)(FheliumBackend* backend);

  /* Operations; fields read besides backend, context and out: */
  FheliumOpFn add;                 /* a, b */
  FheliumOpFn sub;                 /* a, b */
  FheliumOpFn negate;              /* a */
  FheliumOpFn add_constant;        /* a, residues, residue_count, ntt_domain */
  FheliumOpFn multiply_constant;   /* a, residues, residue_count */
  FheliumOpFn multiply_plain;      /* a, b (one component) */
  FheliumOpFn multiply;            /* a, b */
  FheliumOpFn to_ntt;              /* a */
  FheliumOpFn to_coefficient;      /* a */
  FheliumOpFn rescale;             /* a */
  FheliumOpFn drop_limbs;          /* a */
  FheliumOpFn relinearize;         /* a, key */
  FheliumOpFn rotate;              /* a, galois_element, key */
  FheliumOpFn rotate_hoisted;      /* a, outs, galois_elements, keys, count (out unused) */
  /* ABI 1.2: relinearize(multiply(a, b)), fused where the plugin can. NULL
   * (or an older table): the host runs multiply and relinearize. */
  FheliumOpFn multiply_relinearize; /* a, b, key */
  /* ABI 1.3: ModRaise for bootstrapping (a: one limb, coefficient domain).
   * NULL (or an older table): the host runs it through download and upload. */
  FheliumOpFn mod_raise;            /* a */
  /* ABI 1.4: fills `buffer` through host memory the plugin lends (pinned
   * staging, or the buffer itself): calls fill for consecutive chunks of at
   * most 8 MiB, in order, and copies each into the buffer. A fill that returns
   * non-zero stops it with an error; the buffer's content is then
   * unspecified. NULL (or an older table): the host fills a copy and uploads it. */
  FheliumError* (*upload_filled)(FheliumFilledUploadArgs* args);
  /* ABI 1.9: out = sum of terms[i] x plains[i] (NTT domain), or of terms[i]
   * when plains is NULL, in one pass where the plugin fuses it. NULL (or an
   * older table): the host runs multiply_plain and add. */
  FheliumOpFn sum_products; /* terms, plains, term_count */
  /* ABI 1.10: out = sum of terms[i] x the constant whose residues are
   * residues[i * out.limbs ..] (one per limb; residue_count = term_count x
   * out.limbs), any domain, in one pass where the plugin fuses it. NULL (or
   * an older table): the host runs multiply_constant and sum_products. */
  FheliumOpFn sum_constant_products; /* terms, term_count, residues, residue_count */
  /* ABI 1.11: outs[g] = sum of terms[t] x plains[t] over group g's terms
   * [group_ends[g - 1], group_ends[g]) (from 0; `count` groups), NTT domain,
   * in one pass where the plugin fuses it (groups may share terms). NULL (or
   * an older table): the host runs sum_products per group. */
  FheliumOpFn sum_product_groups; /* outs, count, terms, plains, term_count, group_ends */
  /* ABI 1.12: rescale(multiply_relinearize(a, b)) into out (one level below
   * a's), fused where the plugin can. NULL (or an older table): the host runs
   * multiply_relinearize and rescale. */
  FheliumOpFn multiply_relinearize_rescale; /* a, b, key */
  /* ABI 1.13: out = the sum of the rotations of terms[i] by galois_elements[i]
   * with keys[i] (count = term_count), their key switches summed in the
   * extended basis and ModDown'ed once (Backend::rotate_sum: not the residues
   * of separate rotations). term_count 0 is a probe (only backend set):
   * NULL where the plugin's backend has it, an error otherwise. NULL entry
   * (or an older table): the host refuses it (no host fallback has these
   * residues). */
  FheliumOpFn rotate_sum; /* out, terms, term_count, galois_elements, keys, count */
} FheliumBackendApi;

typedef const FheliumBackendApi* (*FheliumBackendApiFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* FHELIUM_PLUGIN_ABI_H */
