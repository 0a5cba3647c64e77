// File conveniences over the stream functions, and peek_kind.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"

namespace fhelium {

using namespace serialization;

namespace {

std::ifstream open_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot open '" + path + "' for reading: " + std::strerror(errno));
  return in;
}

template <class Save>
void save_file(const std::string& path, Save&& save) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError("cannot open '" + path + "' for writing: " + std::strerror(errno));
  save(out);
  out.close();
  if (!out) throw IoError("writing '" + path + "' failed");
}

}  // namespace

ObjectKind peek_kind(std::istream& stream) {
  const auto position = stream.tellg();
  Input in(stream);
  const ObjectKind kind = read_header(in, std::nullopt).header.object_kind();
  if (position != std::istream::pos_type(-1)) {
    stream.clear();
    stream.seekg(position);
  }
  return kind;
}

void save_parameters_file(const std::string& path, const Context& context) {
  save_file(path, [&](std::ostream& out) { save_parameters(out, context); });
}

std::shared_ptr<const Context> load_context_file(const std::string& path) {
  auto in = open_input(path);
  return load_context(in);
}

void save_plaintext_file(const std::string& path, const Context& context, const HostValue& plaintext,
                         SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_plaintext(out, context, plaintext, options); });
}

HostValue load_plaintext_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return load_plaintext(in, context);
}

void save_ciphertext_file(const std::string& path, const Context& context, const HostValue& ciphertext,
                          SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_ciphertext(out, context, ciphertext, options); });
}

void save_ciphertext_file(const std::string& path, const Context& context, const SeededCiphertext& ciphertext,
                          SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_ciphertext(out, context, ciphertext, options); });
}

HostValue load_ciphertext_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return load_ciphertext(in, context);
}

Ciphertext load_ciphertext_file(const std::string& path, const Engine& engine) {
  auto in = open_input(path);
  return load_ciphertext(in, engine);
}

void save_public_key_file(const std::string& path, const Context& context, const PublicKey& key, SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_public_key(out, context, key, options); });
}

PublicKey load_public_key_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return load_public_key(in, context);
}

void save_relinearization_key_file(const std::string& path, const Context& context, const HostSwitchKey& key,
                                   SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_relinearization_key(out, context, key, options); });
}

HostSwitchKey load_relinearization_key_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return load_relinearization_key(in, context);
}

RelinKey load_relinearization_key_file(const std::string& path, const Engine& engine) {
  auto in = open_input(path);
  return load_relinearization_key(in, engine);
}

void save_galois_keys_file(const std::string& path, const Context& context, std::span<const HostSwitchKey> keys,
                           SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_galois_keys(out, context, keys, options); });
}

std::vector<HostSwitchKey> load_galois_keys_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return GaloisKeyFile(in, context).load_all();
}

SecretKey load_secret_key_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return load_secret_key(in, context);
}

void save_sparse_encapsulation_keys_file(const std::string& path, const Context& context,
                                         const SparseEncapsulationKeys& keys, SaveOptions options) {
  save_file(path, [&](std::ostream& out) { save_sparse_encapsulation_keys(out, context, keys, options); });
}

SparseEncapsulationKeys load_sparse_encapsulation_keys_file(const std::string& path, const Context& context) {
  auto in = open_input(path);
  return load_sparse_encapsulation_keys(in, context);
}

}  // namespace fhelium
