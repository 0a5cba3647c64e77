// DeviceGroup and its collectives on several cpu backends (one per rank),
// staged through the host and through the cpu backends' device collectives
// (linked, and through the plugin ABI): every moved value bit-identical to
// the sent one, sums equal to one engine's, and every failure a
// CommunicatorError naming the rank.
#include "fhelium/runtime/device_group.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "fhelium/backend/forwarding_backend.hpp"
#include "fhelium/plugins/loader.hpp"
#include "helpers.hpp"

namespace fhelium::runtime {
namespace {

using test::Fixture;
using test::Message;

// How the data moves: host staging, or the cpu backends' device collectives
// (linked into this program, or loaded as the plugin: through the C ABI).
enum class Transport { staging, cpu_collectives, plugin_collectives };

std::shared_ptr<Backend> backend_for(Transport t) {
  return t == Transport::plugin_collectives ? load_backend("cpu") : cpu::make_cpu_backend({1});
}

struct Group {
  explicit Group(const CkksParameters& params, int ranks, Transport t = Transport::staging)
      : transport(t), fx(params, 1, 0, backend_for(t)) {
    engines.push_back(&fx.engine);
    for (int r = 1; r < ranks; ++r) {
      owned.push_back(std::make_unique<Engine>(fx.context, backend_for(t)));
      engines.push_back(owned.back().get());
    }
  }
  // The engine of c's rank, with the device collectives joined when the transport has them.
  const Engine& engine(Communicator& c) const {
    const Engine& e = *engines[static_cast<std::size_t>(c.rank())];
    if (transport != Transport::staging && !c.connected()) {
      EXPECT_TRUE(c.connect(e));
    }
    return e;
  }
  std::vector<u64> residues(const Engine& e, const Value& v) const { return e.download(v).data; }

  Transport transport;
  Fixture fx;
  std::vector<std::unique_ptr<Engine>> owned;
  std::vector<const Engine*> engines;
};

class DeviceGroupWords : public ::testing::TestWithParam<std::tuple<bool, Transport>> {
 protected:
  CkksParameters params() const {
    return std::get<0>(GetParam()) ? test::small_int32_params(11) : test::small_params(11, 3);
  }
  Transport transport() const { return std::get<1>(GetParam()); }
};

TEST_P(DeviceGroupWords, BroadcastGivesEveryRankTheRootsResiduesAndWorkingKeys) {
  Group g(params(), 3, transport());
  const Message m1 = g.fx.random_message(1.0), m2 = g.fx.random_message(1.0);
  const Ciphertext a = g.fx.encrypt(m1), b = g.fx.encrypt(m2);
  const Plaintext p = g.fx.plaintext(m2, g.fx.context->max_level(), g.fx.scale());
  const RelinKey rk = g.fx.relin_key();
  const GaloisKeys gk = g.fx.galois_keys({1, -3});
  const auto expected_product = g.residues(g.fx.engine, g.fx.engine.multiply_relinearize(a, b, rk));
  const auto expected_rotation = g.residues(g.fx.engine, g.fx.engine.rotate(a, -3, gk));
  std::vector<std::vector<u64>> product(3), rotation(3), plain(3);
  const auto stats = DeviceGroup(3).run([&](Communicator& c) {
    const Engine& e = g.engine(c);
    const bool root = c.rank() == 0;
    const Ciphertext ra = c.broadcast(e, root ? &a : nullptr, 0);
    const Ciphertext rb = c.broadcast(e, root ? &b : nullptr, 0);
    const Plaintext rp = c.broadcast(e, root ? &p : nullptr, 0);
    const RelinKey rrk = c.broadcast(e, root ? &rk : nullptr, 0);
    const GaloisKeys rgk = c.broadcast(e, root ? &gk : nullptr, 0);
    const auto r = static_cast<std::size_t>(c.rank());
    product[r] = g.residues(e, e.multiply_relinearize(ra, rb, rrk));
    rotation[r] = g.residues(e, e.rotate(ra, -3, rgk));
    plain[r] = g.residues(e, rp);
  });
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(product[r] == expected_product) << "rank " << r;
    EXPECT_TRUE(rotation[r] == expected_rotation) << "rank " << r;
    EXPECT_TRUE(plain[r] == g.residues(g.fx.engine, p)) << "rank " << r;
  }
  EXPECT_GT(stats[0].bytes_sent, 0u);
  EXPECT_EQ(stats[0].bytes_received, 0u);
  EXPECT_EQ(stats[1].bytes_received, stats[0].bytes_sent);
  EXPECT_EQ(stats[2].collectives, transport() == Transport::staging ? 5u : 6u);  // and connect
}

TEST_P(DeviceGroupWords, ScatterGatherAndAllGatherMoveEachValueUnchanged) {
  Group g(params(), 3, transport());
  std::vector<Ciphertext> values;
  std::vector<std::vector<u64>> expected;
  for (int r = 0; r < 3; ++r) {
    values.push_back(g.fx.encrypt(g.fx.random_message(1.0), 2));
    expected.push_back(g.residues(g.fx.engine, values.back()));
  }
  std::vector<std::vector<u64>> gathered, all_gathered_on_2;
  DeviceGroup(3).run([&](Communicator& c) {
    const Engine& e = g.engine(c);
    const int root = 1;
    // Rank 1 holds the batch: give it its own copies first.
    std::vector<Ciphertext> batch;
    for (const Ciphertext& v : values) batch.push_back(c.broadcast(e, c.rank() == 0 ? &v : nullptr, 0));
    const Ciphertext mine =
        c.scatter(e, c.rank() == root ? std::span<const Ciphertext>(batch) : std::span<const Ciphertext>(), root);
    EXPECT_TRUE(g.residues(e, mine) == expected[static_cast<std::size_t>(c.rank())]) << "rank " << c.rank();
    const std::vector<Ciphertext> back = c.gather(e, mine, 2);
    if (c.rank() == 2) {
      for (const Ciphertext& v : back) gathered.push_back(g.residues(e, v));
    } else {
      EXPECT_TRUE(back.empty());
    }
    const std::vector<Ciphertext> all = c.all_gather(e, mine);
    ASSERT_EQ(all.size(), 3u);
    if (c.rank() == 2) {
      for (const Ciphertext& v : all) all_gathered_on_2.push_back(g.residues(e, v));
    }
  });
  EXPECT_TRUE(gathered == expected);
  EXPECT_TRUE(all_gathered_on_2 == expected);
}

TEST_P(DeviceGroupWords, AllReduceSumEqualsOneEnginesSumOnEveryRank) {
  Group g(params(), 3, transport());
  std::vector<Ciphertext> values;
  Message expected_message(g.fx.slots());
  for (int r = 0; r < 3; ++r) {
    const Message m = g.fx.random_message(1.0);
    for (std::size_t j = 0; j < m.size(); ++j) expected_message[j] += m[j];
    values.push_back(g.fx.encrypt(m, 1));
  }
  const auto expected = g.residues(g.fx.engine, g.fx.engine.sum(values));
  std::vector<std::vector<u64>> sums(3);
  DeviceGroup(3).run([&](Communicator& c) {
    const Engine& e = g.engine(c);
    const auto r = static_cast<std::size_t>(c.rank());
    const Ciphertext own =
        c.scatter(e, c.rank() == 0 ? std::span<const Ciphertext>(values) : std::span<const Ciphertext>(), 0);
    sums[r] = g.residues(e, c.all_reduce_sum(e, own));
  });
  for (std::size_t r = 0; r < 3; ++r) EXPECT_TRUE(sums[r] == expected) << "rank " << r;
  HostValue host = g.fx.engine.download(values[0]);
  host.data = expected;
  const Message got = g.fx.encoder.decode(g.fx.decryptor.decrypt(host, g.fx.sk));
  EXPECT_LT(test::max_error(expected_message, got), 1e-5);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<bool, Transport>>& info) {
  static const char* const transports[] = {"Staged", "CpuCollectives", "PluginCollectives"};
  return std::string(std::get<0>(info.param) ? "Int32" : "Int64") +
         transports[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(Words, DeviceGroupWords,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(Transport::staging, Transport::cpu_collectives,
                                                              Transport::plugin_collectives)),
                         case_name);

TEST(DeviceGroupErrors, RanksCallingDifferentCollectivesFailByName) {
  Group g(test::small_params(10, 2), 2);
  const Ciphertext a = g.fx.encrypt(g.fx.random_message(1.0));
  try {
    DeviceGroup(2).run([&](Communicator& c) {
      const Engine& e = g.engine(c);
      if (c.rank() == 0) {
        c.broadcast(e, &a, 0);
      } else {
        c.all_gather(e, a);
      }
    });
    FAIL() << "expected a CommunicatorError";
  } catch (const CommunicatorError& e) {
    EXPECT_NE(std::string(e.what()).find("called broadcast (root 0) staged while rank 1 called all_gather staged"),
              std::string::npos)
        << e.what();
  }
}

TEST(DeviceGroupErrors, AFailingRankFailsTheOthersAndItsErrorIsRethrown) {
  std::string seen_by_rank_0;
  try {
    DeviceGroup(3).run([&](Communicator& c) {
      if (c.rank() == 2) throw InvalidArgumentError("rank 2's input is malformed");
      try {
        c.barrier();
      } catch (const CommunicatorError& e) {
        if (c.rank() == 0) seen_by_rank_0 = e.what();
        throw;
      }
    });
    FAIL() << "expected the failing rank's error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "rank 2's input is malformed");
  }
  EXPECT_EQ(seen_by_rank_0, "rank 2 failed: rank 2's input is malformed");
}

TEST(DeviceGroupErrors, ARankThatDoesNotArriveTimesOutWithTheMissingRankNamed) {
  GroupOptions options;
  options.timeout = std::chrono::milliseconds(100);
  try {
    DeviceGroup(2, options).run([&](Communicator& c) {
      if (c.rank() == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));  // hung, then gone
        return;
      }
      c.barrier();
    });
    FAIL() << "expected a timeout";
  } catch (const CommunicatorError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 did not arrive within 100 ms"), std::string::npos) << e.what();
  }
}

TEST(DeviceGroupErrors, DisagreementIsFoundBeforeDataMovesAndNamesTheRankAndLine) {
  try {
    DeviceGroup(3).run([&](Communicator& c) {
      c.check_agreement("the program", c.rank() == 1 ? "x = input\ny = rotate x 2\n" : "x = input\ny = rotate x 1\n");
    });
    FAIL() << "expected a CommunicatorError";
  } catch (const CommunicatorError& e) {
    EXPECT_STREQ(e.what(),
                 "the ranks disagree on the program: rank 1 has 'y = rotate x 2' where rank 0 has 'y = rotate x 1'");
  }
  DeviceGroup(3).run([&](Communicator& c) { c.check_agreement("the context", "same"); });
}

TEST(DeviceGroupErrors, ValuesOfAnotherParameterSetAreRefused) {
  Group g(test::small_params(10, 2), 2);
  Fixture other(test::small_params(10, 3));
  const Ciphertext a = g.fx.encrypt(g.fx.random_message(1.0));
  try {
    DeviceGroup(2).run([&](Communicator& c) {
      const Engine& e = c.rank() == 0 ? g.fx.engine : other.engine;
      c.broadcast(e, c.rank() == 0 ? &a : nullptr, 0);
    });
    FAIL() << "expected a CommunicatorError";
  } catch (const CommunicatorError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 received from rank 0 a value of context"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("the ranks' parameters differ"), std::string::npos) << e.what();
  }
}

TEST(DeviceGroupErrors, AllReduceOfDifferentStatesAndBadArgumentsAreRefused) {
  Group g(test::small_params(10, 2), 2);
  const Ciphertext top = g.fx.encrypt(g.fx.random_message(1.0));
  const Ciphertext lower = g.fx.encrypt(g.fx.random_message(1.0), 1);
  try {
    DeviceGroup(2).run([&](Communicator& c) {
      const Engine& e = g.engine(c);
      const Ciphertext t = c.broadcast(e, c.rank() == 0 ? &top : nullptr, 0);
      const Ciphertext l = c.broadcast(e, c.rank() == 0 ? &lower : nullptr, 0);
      c.all_reduce_sum(e, c.rank() == 0 ? t : l);
    });
    FAIL() << "expected a CommunicatorError";
  } catch (const CommunicatorError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce_sum: rank 1's value is {context"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DeviceGroup(2).run([&](Communicator& c) { c.broadcast(g.engine(c), &top, 2); }), InvalidArgumentError);
  EXPECT_THROW(DeviceGroup(2).run([&](Communicator& c) { c.broadcast(g.engine(c), &top, 0); }), InvalidArgumentError);
  EXPECT_THROW(DeviceGroup(2).run([&](Communicator& c) {
    c.scatter(g.engine(c), c.rank() == 0 ? std::span<const Ciphertext>(&top, 1) : std::span<const Ciphertext>(), 0);
  }),
               InvalidArgumentError);
  EXPECT_THROW(DeviceGroup(0), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::runtime

namespace fhelium::runtime {
namespace {

// A cpu backend that offers no device collectives.
class NoCollectives final : public ForwardingBackend {
 public:
  NoCollectives() : ForwardingBackend(cpu::make_cpu_backend({1})) {}
  bool has_device_collectives() const override { return false; }
};

TEST(DeviceGroupConnect, StaysOnHostStagingUnlessEveryRanksBackendHasCollectives) {
  Group g(test::small_params(10, 2), 2);
  const Engine without(g.fx.context, std::make_shared<NoCollectives>());
  const Ciphertext a = g.fx.encrypt(g.fx.random_message(1.0));
  std::vector<std::vector<u64>> got(2);
  DeviceGroup(2).run([&](Communicator& c) {
    const Engine& e = c.rank() == 0 ? g.fx.engine : without;
    EXPECT_FALSE(c.connect(e));
    EXPECT_FALSE(c.connected());
    got[static_cast<std::size_t>(c.rank())] = e.download(c.broadcast(e, c.rank() == 0 ? &a : nullptr, 0)).data;
  });
  EXPECT_TRUE(got[1] == got[0]);
}

// A cpu backend whose join fails (as NCCL refuses two ranks on one GPU).
class JoinFails final : public ForwardingBackend {
 public:
  JoinFails() : ForwardingBackend(cpu::make_cpu_backend({1})) {}
  std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId&, int, int,
                                                        std::chrono::milliseconds) override {
    throw BackendError("join refused for the test");
  }
};

TEST(DeviceGroupConnect, AJoinThatFailsOnOneRankLeavesEveryRankOnHostStaging) {
  Group g(test::small_params(10, 2), 2, Transport::cpu_collectives);
  const Engine failing(g.fx.context, std::make_shared<JoinFails>());
  const Ciphertext a = g.fx.encrypt(g.fx.random_message(1.0));
  GroupOptions options;
  options.timeout = std::chrono::milliseconds(1000);  // rank 0 waits this long for rank 1 to join
  std::vector<std::vector<u64>> got(2);
  std::vector<std::string> why(2);
  DeviceGroup(2, options).run([&](Communicator& c) {
    const Engine& e = c.rank() == 0 ? g.fx.engine : failing;
    EXPECT_FALSE(c.connect(e));
    why[static_cast<std::size_t>(c.rank())] = c.not_connected();
    got[static_cast<std::size_t>(c.rank())] = e.download(c.broadcast(e, c.rank() == 0 ? &a : nullptr, 0)).data;
  });
  EXPECT_TRUE(got[1] == got[0]);
  for (const std::string& w : why) {
    EXPECT_NE(w.find("could not join"), std::string::npos) << w;
  }
  EXPECT_NE(why[1].find("join refused for the test"), std::string::npos) << why[1];
}

// With device collectives, a rank that cannot receive tells the others
// before any device broadcast starts: an error, not a hang.
TEST(DeviceGroupConnect, ARankThatCannotReceiveFailsEveryRankBeforeTheDeviceBroadcast) {
  Group g(test::small_params(10, 2), 2, Transport::cpu_collectives);
  Fixture other(test::small_params(10, 3), 1, 0, cpu::make_cpu_backend({1}));
  const Ciphertext a = g.fx.encrypt(g.fx.random_message(1.0));
  GroupOptions options;
  options.timeout = std::chrono::seconds(20);
  const auto start = std::chrono::steady_clock::now();
  try {
    DeviceGroup(2, options).run([&](Communicator& c) {
      const Engine& e = c.rank() == 0 ? g.fx.engine : other.engine;
      EXPECT_TRUE(c.connect(e));
      c.broadcast(e, c.rank() == 0 ? &a : nullptr, 0);
    });
    FAIL() << "expected a CommunicatorError";
  } catch (const CommunicatorError& e) {
    EXPECT_NE(std::string(e.what()).find("the ranks' parameters differ"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace fhelium::runtime

namespace fhelium::runtime {
namespace {

// The cpu backends' device collectives themselves: a broadcast whose root
// timed out breaks the group, so a late rank fails instead of copying from
// a buffer the root has released.
TEST(CpuCollectives, ALateRankFailsAfterTheRootTimedOut) {
  auto backend0 = cpu::make_cpu_backend({1}), backend1 = cpu::make_cpu_backend({1});
  ASSERT_TRUE(backend0->has_device_collectives());
  const CommunicatorId id = *backend0->communicator_id();
  const auto timeout = std::chrono::milliseconds(100);
  std::unique_ptr<DeviceCommunicator> c0, c1;
  {
    std::jthread joiner([&] { c1 = backend1->join_communicator(id, 2, 1, timeout); });
    c0 = backend0->join_communicator(id, 2, 0, timeout);
  }
  ASSERT_TRUE(c0 && c1);
  std::string late;
  {
    std::jthread rank1([&] {
      auto buffer = backend1->allocate(64);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      try {
        c1->broadcast(*buffer, 64, 0);
      } catch (const BackendError& e) {
        late = e.what();
      }
    });
    auto buffer = backend0->allocate(64);
    EXPECT_THROW(c0->broadcast(*buffer, 64, 0), BackendError);
  }
  EXPECT_NE(late.find("rank 0 waited 100 ms"), std::string::npos) << late;
  // A join that one rank never makes fails the others after the timeout.
  const CommunicatorId lonely = *backend0->communicator_id();
  EXPECT_THROW(backend0->join_communicator(lonely, 2, 0, timeout), BackendError);
}

}  // namespace
}  // namespace fhelium::runtime
