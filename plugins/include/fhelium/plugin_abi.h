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
#define FHELIUM_ABI_MINOR 0
#define FHELIUM_ENTRY_SYMBOL "fhelium_backend_api"

/* Returned by the plugin, owned by the caller: free with error_destroy. */
typedef struct FheliumError FheliumError;
/* Opaque handles, each released by its destroy function. */
typedef struct FheliumBackend FheliumBackend;       /* one backend instance */
typedef struct FheliumContext FheliumContext;       /* tables for one CKKS context */
typedef struct FheliumBuffer FheliumBuffer;         /* backend memory */

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
  FHELIUM_EXTENSION_DEVICE_INFO = 1
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
  int32_t word_bits;               /* 64 today */
  const uint64_t* q_primes;        /* borrowed for the call */
  int32_t q_count;
  const uint64_t* p_primes;        /* borrowed for the call */
  int32_t p_count;
  double scale;
  FheliumContext* context;         /* out: owned by the caller (context_destroy) */
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

typedef FheliumError* (*FheliumOpFn)(FheliumOpArgs* args);

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
} FheliumBackendApi;

typedef const FheliumBackendApi* (*FheliumBackendApiFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* FHELIUM_PLUGIN_ABI_H */
