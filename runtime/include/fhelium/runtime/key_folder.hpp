// The files of a key folder, as `fhelium keygen` writes it and the server side
// of `fhelium run --keys DIR` reads it. A server's folder holds everything but
// the secret key.
#pragma once

namespace fhelium::runtime::key_folder {

inline constexpr const char* parameters = "params.fhe";
inline constexpr const char* public_key = "public.key";
inline constexpr const char* relinearization_key = "relinearization.key";
inline constexpr const char* galois_keys = "galois.keys";
// Bootstrapping under a dense secret: the sparse-secret encapsulation's two keys.
inline constexpr const char* sparse_encapsulation_keys = "sparse_encapsulation.keys";
inline constexpr const char* secret_key = "secret.key";  // the client's folder only

}  // namespace fhelium::runtime::key_folder
