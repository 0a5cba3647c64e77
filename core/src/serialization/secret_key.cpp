// The secret key in the clear: its N coefficients as signed bytes. Written
// only by functions whose names say so; never compressed, so no compressor
// buffer holds it.
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <ostream>
#include <sstream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/payload.hpp"
#include "serialization/state.hpp"

namespace fhelium {

using namespace serialization;

namespace {

// Wipes a buffer that held secret bytes, whichever way the scope ends.
template <class Buffer>
struct Wipe {
  Buffer& buffer;
  ~Wipe() { OPENSSL_cleanse(buffer.data(), buffer.size()); }
};

void check_coefficients(const Context& ctx, const std::vector<std::int8_t>& c) {
  const CkksParameters& params = ctx.params();
  const int bound = params.secret == SecretDistribution::gaussian ? static_cast<int>(6 * error_stddev) : 1;
  int nonzero = 0;
  for (std::size_t k = 0; k < c.size(); ++k) {
    if (std::abs(c[k]) > bound) {
      throw FormatError("the secret key's coefficient " + std::to_string(k) + " is " + std::to_string(c[k]) +
                        ", expected a value in [-" + std::to_string(bound) + ", " + std::to_string(bound) + "] for a " +
                        to_string(params.secret) + " secret");
    }
    nonzero += c[k] != 0;
  }
  if (params.hamming_weight > 0 && nonzero != params.hamming_weight) {
    throw FormatError("the secret key has " + std::to_string(nonzero) + " non-zero coefficients, expected the " +
                      "context's hamming weight " + std::to_string(params.hamming_weight));
  }
}

std::string errno_text() { return std::strerror(errno); }

// An open file descriptor that refuses to outlive its scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void save_secret_key_unprotected(std::ostream& out, const Context& ctx, const SecretKey& key) {
  if (key.context_id() != ctx.id() || key.coefficients().size() != ctx.ring_degree()) {
    throw StateError("cannot save a secret key of context " + std::to_string(key.context_id()) + " with " +
                     std::to_string(key.coefficients().size()) + " coefficients: expected context " +
                     std::to_string(ctx.id()) + " and " + std::to_string(ctx.ring_degree()) + " coefficients");
  }
  const ConstSegment segment{key.coefficients().data(), key.coefficients().size()};
  write_object(out, base_header(ctx, ObjectKind::secret_key), std::span(&segment, 1), SaveOptions{});
}

void save_secret_key_file_unprotected(const std::string& path, const Context& ctx, const SecretKey& key) {
  std::string bytes;
  Wipe<std::string> wipe{bytes};
  {
    std::ostringstream s;
    save_secret_key_unprotected(s, ctx, key);
    bytes = std::move(s).str();
  }
  // O_EXCL creates the file with mode 0600 or fails; an existing file is
  // reused only when it already is a regular 0600 file of this user.
  Fd file{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)};
  if (file.fd >= 0) {
    if (::fchmod(file.fd, 0600) != 0) throw IoError("cannot set mode 0600 on '" + path + "': " + errno_text());
  } else if (errno == EEXIST) {
    file.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (file.fd < 0) throw IoError("cannot open '" + path + "' to overwrite it: " + errno_text());
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) throw IoError("cannot stat '" + path + "': " + errno_text());
    const unsigned mode = st.st_mode & 07777;
    if (!S_ISREG(st.st_mode) || mode != 0600 || st.st_uid != ::geteuid()) {
      std::ostringstream why;
      why << "refusing to overwrite '" << path << "' with a secret key: it is "
          << (S_ISREG(st.st_mode) ? "a regular file" : "not a regular file") << " of mode 0" << std::oct << mode
          << std::dec << " owned by uid " << st.st_uid << ", expected a regular file of mode 0600 owned by uid "
          << ::geteuid();
      throw IoError(why.str());
    }
    if (::ftruncate(file.fd, 0) != 0) throw IoError("cannot truncate '" + path + "': " + errno_text());
  } else {
    throw IoError("cannot create '" + path + "': " + errno_text());
  }
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError("writing the secret key to '" + path + "' failed: " + errno_text());
    done += static_cast<std::size_t>(n);
  }
  const int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) throw IoError("closing '" + path + "' failed: " + errno_text());
}

SecretKey load_secret_key(std::istream& stream, const Context& ctx) {
  const std::string what = "the secret key";
  Input in(stream);
  const ReadHeader r = read_header(in, ObjectKind::secret_key);
  const Header& h = r.header;
  check_context(h, ctx);
  check_no_state(h, what);
  check_not_seeded(h, what);
  if (h.compressed()) throw FormatError(what + " is flagged compressed; a secret key is never stored compressed");
  check_sizes(h, ctx.ring_degree(), in.remaining(), what);
  std::vector<std::int8_t> coefficients(ctx.ring_degree());
  Wipe<std::vector<std::int8_t>> wipe{coefficients};
  const Segment segment{coefficients.data(), coefficients.size()};
  read_object_payload(in, r, std::span(&segment, 1), [](int, int) { return std::string("the coefficients"); });
  check_coefficients(ctx, coefficients);
  return make_secret_key(ctx, coefficients);
}

}  // namespace fhelium
