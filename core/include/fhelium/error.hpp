// Typed errors. Every message names the value, its state and what was expected.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

namespace fhelium {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parameters that cannot be built (no primes of a size, bad ring degree, ...).
class ParameterError : public Error {
 public:
  using Error::Error;
};

// Parameters the HE security table refuses.
class SecurityError : public ParameterError {
 public:
  using ParameterError::ParameterError;
};

// Operands whose state (context, level, scale, domain, basis, components) does
// not fit the operation.
class StateError : public Error {
 public:
  // The rule that failed, for callers that explain it in their own terms
  // (the YAML pipeline names its steps and suggests a fix): the operation,
  // the state field ("level", "scale", "domain", "components", "context",
  // "word size", "basis", "storage") and the expected and actual values as
  // text ("2", "3"; "equal levels", "3 and 4").
  struct Mismatch {
    std::string operation;
    std::string field;
    std::string expected;
    std::string got;
  };

  using Error::Error;
  StateError(const std::string& message, std::optional<Mismatch> mismatch)
      : Error(message), mismatch_(std::move(mismatch)) {}
  // Empty for state errors that are not one rule (a host value of the wrong size).
  const std::optional<Mismatch>& mismatch() const { return mismatch_; }

 private:
  std::optional<Mismatch> mismatch_;
};

// A relinearization, rotation or conjugation key that was not provided.
class MissingKeyError : public Error {
 public:
  using Error::Error;
};

// An argument out of range: rotation step, message length, slot count, ...
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

// A failure inside a backend (device error, out of memory, ...).
class BackendError : public Error {
 public:
  using Error::Error;
};

// A backend plugin that is missing, incompatible or broken.
class PluginError : public Error {
 public:
  using Error::Error;
};

// A serialized object that is malformed, corrupted, truncated, of an unknown
// format version or of another object kind than the one asked for.
class FormatError : public Error {
 public:
  using Error::Error;
};

// A file or stream that could not be opened, read or written.
class IoError : public Error {
 public:
  using Error::Error;
};

// A collective between ranks that cannot complete: ranks that disagree on
// parameters, program or operation, a rank that failed or did not arrive
// within the group's timeout.
class CommunicatorError : public Error {
 public:
  using Error::Error;
};

}  // namespace fhelium
