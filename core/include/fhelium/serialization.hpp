// Saving and loading parameters, values and keys: the versioned FHElium
// format of docs/serialization.md (little-endian, fixed widths, a header with
// the context fingerprint and the value's state, an XXH3-64 integrity check).
//
// Every loader checks the whole object before it trusts it: magic, version,
// kind, header check, word size, the context fingerprint, a legal state,
// sizes consistent with the context (before allocating), the integrity check,
// and every residue below its prime. Failures throw FormatError (malformed,
// corrupted, truncated, unknown version, wrong kind) or StateError (a
// well-formed object of another context or word size); nothing is read past
// the object. Streams are read in bounded chunks; on a seekable stream a
// declared size larger than what remains is refused before any allocation.
// Read and write failures of the stream itself throw IoError.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fhelium/context.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/sparse_encapsulation.hpp"
#include "fhelium/value.hpp"

namespace fhelium {

enum class ObjectKind : std::uint16_t {
  parameters = 1,
  plaintext = 2,
  ciphertext = 3,
  public_key = 4,
  relinearization_key = 5,
  galois_keys = 6,
  secret_key = 7,
  sparse_encapsulation_keys = 8,
};

std::string to_string(ObjectKind kind);

// Per call: zstd compression of the payload (the integrity check covers the
// stored, compressed bytes). Levels as zstd's (1..22; negative: faster).
struct SaveOptions {
  bool compress = false;
  int compression_level = 3;
};

// SHA-256 of the context's ring degree, q primes, special primes, word size,
// scale, secret distribution, hamming weight and security level (the exact
// bytes are in docs/serialization.md). Two contexts built from the same
// parameters have the same fingerprint, in any process.
using Fingerprint = std::array<std::uint8_t, 32>;
Fingerprint context_fingerprint(const Context& context);
// The first `bytes` bytes in lower-case hex (all 32 by default).
std::string to_hex(const Fingerprint& fingerprint, std::size_t bytes = 32);

// The kind of the object at the stream's position, from its header (magic,
// version and header check are verified). The position is restored when the
// stream is seekable; otherwise the header is consumed.
ObjectKind peek_kind(std::istream& in);

// Parameters: the full description including the primes. Loading rebuilds the
// context with Context::create_with_primes, so the security check runs again
// (an insecure set loads only when it was saved with allow_insecure);
// SecurityError then propagates as it is.
void save_parameters(std::ostream& out, const Context& context);
std::shared_ptr<const Context> load_context(std::istream& in);

// Values keep their full state (level, scale, domain, basis, components).
void save_plaintext(std::ostream& out, const Context& context, const HostValue& plaintext, SaveOptions options = {});
HostValue load_plaintext(std::istream& in, const Context& context);
void save_ciphertext(std::ostream& out, const Context& context, const HostValue& ciphertext, SaveOptions options = {});
// The seeded form of a fresh symmetric ciphertext: c1 is stored as its seed.
void save_ciphertext(std::ostream& out, const Context& context, const SeededCiphertext& ciphertext,
                     SaveOptions options = {});
HostValue load_ciphertext(std::istream& in, const Context& context);
// Straight into the engine's backend (Engine::upload_ciphertext with a fill):
// the payload is read, hashed and checked in the memory the backend lends
// (its pinned staging on cuda, the value itself on cpu), with no host copy of
// the object; the same checks and errors as the host loader, and on any
// error no value (the backend memory is released). A seeded ciphertext is
// expanded on the host first.
Ciphertext load_ciphertext(std::istream& in, const Engine& engine);

// Keys with an a_seed are stored seeded (their `a` as the 32-byte seed, about
// half the bytes); the seed is trusted to reproduce `a`, so a key whose `a`
// was changed after generation must have its a_seed reset first. Loaded keys
// keep their seed, so saving them again gives the same bytes.
void save_public_key(std::ostream& out, const Context& context, const PublicKey& key, SaveOptions options = {});
PublicKey load_public_key(std::istream& in, const Context& context);
void save_relinearization_key(std::ostream& out, const Context& context, const HostSwitchKey& key,
                              SaveOptions options = {});
HostSwitchKey load_relinearization_key(std::istream& in, const Context& context);
// Straight into the engine's backend, as load_ciphertext(in, engine); a
// seeded key is expanded on the host first.
RelinKey load_relinearization_key(std::istream& in, const Engine& engine);

// A set of Galois keys: an index (element, offset, size) followed by one entry
// per key, each with its own integrity check, so one key can be loaded alone.
// With compression every entry is compressed in memory first (the index
// holds their sizes).
void save_galois_keys(std::ostream& out, const Context& context, std::span<const HostSwitchKey> keys,
                      SaveOptions options = {});

// Reads a Galois key file's index; keys are read on demand. The stream and the
// context must outlive this object. load() seeks to its entry, so loading one
// key out of order needs a seekable stream; load_all() reads forward only.
class GaloisKeyFile {
 public:
  GaloisKeyFile(std::istream& in, const Context& context);

  // The Galois elements held, ascending.
  std::vector<std::uint32_t> elements() const;
  bool contains(std::uint32_t galois_element) const;
  // Throws MissingKeyError naming the element and the elements held.
  HostSwitchKey load(std::uint32_t galois_element);
  std::vector<HostSwitchKey> load_all();

 private:
  struct Entry {
    std::uint32_t element = 0;
    std::uint16_t flags = 0;
    std::uint64_t offset = 0;  // from the first byte after the index's check
    std::uint64_t stored_bytes = 0;
    std::uint64_t payload_bytes = 0;
    std::array<std::uint8_t, 32> row{};  // the index row, covered by the entry's check
  };
  HostSwitchKey read_entry(const Entry& entry);

  std::istream& in_;
  const Context& context_;
  std::vector<Entry> entries_;
  std::int64_t entries_start_ = -1;  // stream position of entry offset 0; -1 when not seekable
  std::uint64_t next_offset_ = 0;    // entry offset at the stream's position
};

// The sparse-secret encapsulation's two switching keys (bootstrapping under a
// dense secret) in one object; the loader rebuilds their low context from
// the caller's. Evaluation keys: no secret is stored.
void save_sparse_encapsulation_keys(std::ostream& out, const Context& context, const SparseEncapsulationKeys& keys,
                                    SaveOptions options = {});
SparseEncapsulationKeys load_sparse_encapsulation_keys(std::istream& in, const Context& context);

// The secret key in the clear: the names say so. The coefficients are stored
// (N bytes); loading recomputes the key's NTT forms. The file variant creates
// the file with mode 0600 and refuses to overwrite a file that is not a
// regular 0600 file of the caller.
void save_secret_key_unprotected(std::ostream& out, const Context& context, const SecretKey& key);
void save_secret_key_file_unprotected(const std::string& path, const Context& context, const SecretKey& key);
SecretKey load_secret_key(std::istream& in, const Context& context);

// File conveniences (IoError when the file cannot be opened or written).
void save_parameters_file(const std::string& path, const Context& context);
std::shared_ptr<const Context> load_context_file(const std::string& path);
void save_plaintext_file(const std::string& path, const Context& context, const HostValue& plaintext,
                         SaveOptions options = {});
HostValue load_plaintext_file(const std::string& path, const Context& context);
void save_ciphertext_file(const std::string& path, const Context& context, const HostValue& ciphertext,
                          SaveOptions options = {});
void save_ciphertext_file(const std::string& path, const Context& context, const SeededCiphertext& ciphertext,
                          SaveOptions options = {});
HostValue load_ciphertext_file(const std::string& path, const Context& context);
Ciphertext load_ciphertext_file(const std::string& path, const Engine& engine);
void save_public_key_file(const std::string& path, const Context& context, const PublicKey& key,
                          SaveOptions options = {});
PublicKey load_public_key_file(const std::string& path, const Context& context);
void save_relinearization_key_file(const std::string& path, const Context& context, const HostSwitchKey& key,
                                   SaveOptions options = {});
HostSwitchKey load_relinearization_key_file(const std::string& path, const Context& context);
RelinKey load_relinearization_key_file(const std::string& path, const Engine& engine);
void save_galois_keys_file(const std::string& path, const Context& context, std::span<const HostSwitchKey> keys,
                           SaveOptions options = {});
std::vector<HostSwitchKey> load_galois_keys_file(const std::string& path, const Context& context);
SecretKey load_secret_key_file(const std::string& path, const Context& context);
void save_sparse_encapsulation_keys_file(const std::string& path, const Context& context,
                                         const SparseEncapsulationKeys& keys, SaveOptions options = {});
SparseEncapsulationKeys load_sparse_encapsulation_keys_file(const std::string& path, const Context& context);

}  // namespace fhelium
