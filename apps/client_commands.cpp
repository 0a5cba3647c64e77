#include "client_commands.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/error.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/runtime/key_folder.hpp"
#include "fhelium/runtime/pipeline.hpp"
#include "fhelium/serialization.hpp"

namespace fhelium::apps {
namespace {

namespace fs = std::filesystem;
namespace folder = runtime::key_folder;

std::shared_ptr<const Context> context_from(const std::string& preset_or_file) {
  if (fs::is_regular_file(preset_or_file)) return load_context_file(preset_or_file);
  return Context::create(preset(preset_or_file));
}

// --params, else the parameters file of the key folder that holds `key_file`.
std::shared_ptr<const Context> context_for_key(const std::string& params, const std::string& key_file) {
  if (!params.empty()) return context_from(params);
  const fs::path beside = fs::path(key_file).parent_path() / folder::parameters;
  if (!fs::exists(beside)) {
    throw InvalidArgumentError("no --params given and no " + std::string(folder::parameters) + " beside '" + key_file +
                               "': pass --params PRESET|FILE");
  }
  return load_context_file(beside.string());
}

void report_file(const fs::path& path, const char* what) {
  std::printf("  %-22s %10.2f MB  %s\n", what, static_cast<double>(fs::file_size(path)) / 1e6, path.c_str());
}

// Numbers from a JSON array or a CSV file (commas, spaces or new lines
// between values; a first line that is not a number is a header).
std::vector<double> read_values(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot open '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<double> values;
  if (fs::path(path).extension() == ".json") {
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(text.str(), ec);
    if (ec || !doc.is_array()) throw InvalidArgumentError("'" + path + "' is not a JSON array of numbers");
    for (const auto& v : doc.as_array()) {
      if (!v.is_number()) throw InvalidArgumentError("'" + path + "': every element must be a number");
      values.push_back(v.to_number<double>());
    }
    return values;
  }
  std::string line;
  for (int number = 1; std::getline(text, line); ++number) {
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(field, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != field.size() || !std::isfinite(v)) {
        if (number == 1 && values.empty()) break;  // a header
        throw InvalidArgumentError(path + ":" + std::to_string(number) + ": '" + field + "' is not a finite number");
      }
      values.push_back(v);
    }
  }
  return values;
}

}  // namespace

int run_keygen(const KeygenOptions& options) {
  std::shared_ptr<const Context> context;
  bool relinearization = true;
  bool encapsulation = false;
  std::set<std::uint32_t> elements;
  if (!options.pipeline.empty()) {
    const runtime::PipelineSpec spec = runtime::load_pipeline(options.pipeline);
    const runtime::PipelinePlan plan = runtime::plan_pipeline(spec);
    context = options.params.empty() ? plan.context : context_from(options.params);
    if (context_fingerprint(*context) != context_fingerprint(*plan.context)) {
      throw InvalidArgumentError("--params " + options.params + " differs from the parameters of '" + options.pipeline +
                                 "' (fingerprints " + to_hex(context_fingerprint(*context), 8) + " and " +
                                 to_hex(context_fingerprint(*plan.context), 8) + ")");
    }
    encapsulation = plan.keys.sparse_encapsulation;
    relinearization = plan.keys.relinearization;
    elements = plan.keys.galois_elements(*plan.context);
  } else {
    if (options.params.empty()) throw InvalidArgumentError("keygen needs --params PRESET|FILE or --for PIPELINE.yaml");
    context = context_from(options.params);
    for (long step : options.rotations) elements.insert(context->galois_element(step));
    if (options.conjugation) elements.insert(context->conjugation_element());
  }
  const fs::path dir(options.out);
  fs::create_directories(dir);
  SaveOptions save;
  save.compress = options.compress;
  Csprng rng;
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  std::printf("keys for N = %llu, %d levels, in %s\n", static_cast<unsigned long long>(context->ring_degree()),
              context->max_level(), dir.c_str());
  save_parameters_file((dir / folder::parameters).string(), *context);
  report_file(dir / folder::parameters, "parameters");
  save_secret_key_file_unprotected((dir / folder::secret_key).string(), *context, sk);
  report_file(dir / folder::secret_key, "secret key (mode 0600)");
  save_public_key_file((dir / folder::public_key).string(), *context, keygen.public_key(sk), save);
  report_file(dir / folder::public_key, "public key");
  if (relinearization) {
    save_relinearization_key_file((dir / folder::relinearization_key).string(), *context,
                                  keygen.relinearization_key(sk), save);
    report_file(dir / folder::relinearization_key, "relinearization key");
  }
  if (!elements.empty()) {
    std::vector<HostSwitchKey> galois;
    for (std::uint32_t e : elements) galois.push_back(keygen.galois_key(sk, e));
    save_galois_keys_file((dir / folder::galois_keys).string(), *context, galois, save);
    report_file(dir / folder::galois_keys, (std::to_string(elements.size()) + " Galois keys").c_str());
  }
  if (encapsulation) {
    save_sparse_encapsulation_keys_file((dir / folder::sparse_encapsulation_keys).string(), *context,
                                        SparseEncapsulationKeys::generate(context, sk, rng), save);
    report_file(dir / folder::sparse_encapsulation_keys, "encapsulation keys");
  }
  std::printf("the server needs every file but %s\n", folder::secret_key);
  return 0;
}

int run_encrypt(const EncryptOptions& options) {
  const auto context = context_for_key(options.params, options.public_key);
  const PublicKey pk = load_public_key_file(options.public_key, *context);
  const std::vector<double> values = read_values(options.in);
  const std::size_t slots = context->ring_degree() / 2;
  if (values.empty() || values.size() > slots) {
    throw InvalidArgumentError("'" + options.in + "' holds " + std::to_string(values.size()) + " values, expected 1.." +
                               std::to_string(slots) + " (the slots)");
  }
  const int level = options.level.value_or(context->max_level());
  if (level < 0 || level > context->max_level()) {
    throw InvalidArgumentError("--level " + std::to_string(level) + " is out of range: expected 0.." +
                               std::to_string(context->max_level()));
  }
  Encoder encoder(context);
  Csprng rng;
  Encryptor encryptor(context, rng);
  SaveOptions save;
  save.compress = options.compress;
  save_ciphertext_file(options.out, *context,
                       encryptor.encrypt(encoder.encode(values, level, context->params().scale), pk), save);
  std::printf("%zu values encrypted at level %d -> %s (%.2f MB)\n", values.size(), level, options.out.c_str(),
              static_cast<double>(fs::file_size(options.out)) / 1e6);
  return 0;
}

int run_decrypt(const DecryptOptions& options) {
  const auto context = context_for_key(options.params, options.secret_key);
  const SecretKey sk = load_secret_key_file(options.secret_key, *context);
  const HostValue ct = load_ciphertext_file(options.in, *context);
  const std::size_t slots = context->ring_degree() / 2;
  const std::size_t count = options.count.value_or(slots);
  if (count == 0 || count > slots) {
    throw InvalidArgumentError("--count " + std::to_string(count) + " is out of range: expected 1.." +
                               std::to_string(slots));
  }
  const auto decoded = Encoder(context).decode(Decryptor(context).decrypt(ct, sk));
  std::ofstream out(options.out);
  out.precision(17);
  out << "slot,value\n";
  for (std::size_t i = 0; i < count; ++i) out << i << "," << decoded[i].real() << "\n";
  if (!out) throw IoError("cannot write '" + options.out + "'");
  std::printf("%zu slots decrypted (level %d) -> %s\n", count, ct.state.level, options.out.c_str());
  return 0;
}

}  // namespace fhelium::apps
