// The client's side of a client/server workflow: `fhelium keygen`, `fhelium
// encrypt` and `fhelium decrypt`. The server's side is `fhelium run --keys`.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fhelium::apps {

struct KeygenOptions {
  std::string params;           // a preset name or a parameters file
  std::string pipeline;         // --for: exactly the keys this pipeline needs
  std::vector<long> rotations;  // without --for: rotation steps
  bool conjugation = false;     // without --for: a conjugation key
  bool compress = false;        // zstd
  std::string out;              // the folder written
};

struct EncryptOptions {
  std::string public_key;
  std::string params;  // default: params.fhe beside the public key
  std::string in;      // .csv or .json numbers
  std::string out;
  std::optional<int> level;  // default: the top level
  bool compress = false;
};

struct DecryptOptions {
  std::string secret_key;
  std::string params;  // default: params.fhe beside the secret key
  std::string in;
  std::string out;                   // .csv (slot,value)
  std::optional<std::size_t> count;  // slots written (default: all)
};

int run_keygen(const KeygenOptions& options);
int run_encrypt(const EncryptOptions& options);
int run_decrypt(const DecryptOptions& options);

}  // namespace fhelium::apps
