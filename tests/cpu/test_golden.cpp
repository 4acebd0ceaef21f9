// Golden gdn-case v1 files: the float64 reference against the independent oracle, KVBuffer verify on the draft4 case,
// and the reader's errors on malformed files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "harness/workloads/golden_gpu.h"
#include "reference/gdn_reference.h"
#include "reference/golden_case.h"

namespace kvb::ref {
namespace {

namespace fs = std::filesystem;

const std::string kGoldenDir = std::string(KVB_TEST_DATA_DIR) + "/golden";

std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kGoldenDir)) {
    if (e.path().extension() == ".gdn") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GoldenReference, EveryCasePassesAt1e6) {
  const std::vector<std::string> files = golden_files();
  ASSERT_GE(files.size(), 6u) << "golden cases missing from " << kGoldenDir;
  int with_states = 0;
  for (const std::string& f : files) {
    const GoldenCase c = load_golden_case(f);
    const std::vector<TensorCheck> checks = check_golden_reference(c);
    ASSERT_EQ(checks.size(), c.has("states") ? 3u : 2u) << f;
    with_states += c.has("states");
    for (const TensorCheck& t : checks) {
      EXPECT_EQ(t.engine, "reference");
      EXPECT_EQ(t.tolerance, 1e-6);
      EXPECT_TRUE(t.pass()) << c.name << " " << t.tensor << " max_rel_err " << t.max_rel_err;
      std::printf("  golden %-20s %-12s max_rel_err %.3e\n", c.name.c_str(), t.tensor.c_str(), t.max_rel_err);
    }
  }
  EXPECT_GE(with_states, 3);
}

// The check is a real comparison: a 1e-3 relative change to one value of o, final_state or states makes it fail.
TEST(GoldenReference, PerturbedGoldenValueFails) {
  const GoldenCase base = load_golden_case(kGoldenDir + "/draft4.gdn");
  for (const char* tensor : {"o", "final_state", "states"}) {
    GoldenCase c = base;
    std::vector<double>& v = c.tensors.at(tensor).values;
    const int64_t head_elems = c.tensors.at(tensor).dims.back() * (std::string(tensor) == "o" ? 1 : c.shape.head_dim_k);
    const size_t i = v.size() / 3;  // a value inside some head
    const size_t head0 = i - i % size_t(head_elems);
    double head_max = 0;
    for (size_t j = head0; j < head0 + size_t(head_elems); ++j) head_max = std::max(head_max, std::abs(v[j]));
    v[i] += 1e-3 * head_max;
    const std::vector<TensorCheck> checks = check_golden_reference(c);
    for (const TensorCheck& t : checks) {
      if (t.tensor == tensor) {
        EXPECT_FALSE(t.pass()) << tensor;
        EXPECT_NEAR(t.max_rel_err, 1e-3, 1e-5) << tensor;
      } else {
        EXPECT_TRUE(t.pass()) << t.tensor << " after perturbing " << tensor;
      }
    }
  }
}

// The file's g and beta equal prepare_token's gates from a, b, A_log, dt_bias to fp32 rounding, in the cases that do
// not override them.
TEST(GoldenReference, PreparedGatesMatchRawInputs) {
  for (const char* name : {"grouped_small", "long_t300", "draft4", "t1_no_state"}) {
    const GoldenCase c = load_golden_case(kGoldenDir + "/" + name + ".gdn");
    const GateParams p = golden_gate_params(c);
    double worst_g = 0, worst_beta = 0;
    for (int n = 0; n < c.N; ++n) {
      for (int t = 0; t < c.T; ++t) {
        const TokenPrepared r = prepare_token(c.shape, golden_token(c, n, t), p);
        const std::vector<double> g = c.tensor("g").slice({n, t}), beta = c.tensor("beta").slice({n, t});
        for (int h = 0; h < c.shape.heads_v; ++h) {
          worst_g = std::max(worst_g, std::abs(r.g[h] - g[h]) / std::abs(g[h]));
          worst_beta = std::max(worst_beta, std::abs(r.beta[h] - beta[h]) / beta[h]);
        }
      }
    }
    EXPECT_LE(worst_g, 5e-7) << name;
    EXPECT_LE(worst_beta, 5e-7) << name;
  }
}

// draft4 through kvbuffer_verify from its initial state (as checkpoint): outputs and, after accepting a drafts, the
// state equal the oracle's o and states[a - 1]; with buffer size 2 accepting 2..4 drafts leaves the slot due, and
// the fold of the next verify gives the same state.
TEST(GoldenReference, Draft4ThroughKVBufferVerify) {
  const GoldenCase c = load_golden_case(kGoldenDir + "/draft4.gdn");
  ASSERT_TRUE(c.has("states"));
  const GdnShape& s = c.shape;
  double worst_o = 0, worst_state = 0;
  for (int n = 0; n < c.N; ++n) {
    std::vector<TokenPrepared> drafts;
    for (int t = 0; t < c.T; ++t) drafts.push_back(golden_prepared_token(c, n, t));
    KVBufferSlot slot{golden_initial_state(c, n), {}};
    std::vector<double> o;
    std::vector<BufferEntry> entries;
    kvbuffer_verify(s, 8, drafts, slot, o, entries);
    const std::vector<double> want_o = c.tensor("o").slice({n});
    worst_o = std::max(worst_o, max_rel_err(want_o, o, int64_t(c.T) * s.heads_v));
    for (int B : {2, 8}) {
      for (int a = 1; a <= c.T; ++a) {
        KVBufferSlot accepted = slot;
        kvbuffer_accept(s, B, entries, a, accepted);
        const std::vector<double> want = c.tensor("states").slice({n, a - 1});
        worst_state = std::max(worst_state, max_rel_err(want, kvbuffer_state(s, accepted), s.heads_v));
        if (a >= B) {
          std::vector<double> o_next;
          std::vector<BufferEntry> next;
          kvbuffer_verify(s, B, drafts, accepted, o_next, next);  // due: folded first
          EXPECT_TRUE(accepted.entries.empty());
          worst_state = std::max(worst_state, max_rel_err(want, accepted.checkpoint, s.heads_v));
        }
      }
    }
  }
  EXPECT_LE(worst_o, kGoldenReferenceTolerance);
  EXPECT_LE(worst_state, kGoldenReferenceTolerance);
  std::printf("  draft4 via kvbuffer_verify: o %.3e, accepted states %.3e\n", worst_o, worst_state);
}

// ---- malformed files ----

/// A small valid gdn-case v1 text: N=1, T=2, H=1, HV=1, K=2, V=3, one line per tensor row of values.
std::vector<std::string> tiny_case() {
  return {
      "# tiny case",                      // 1
      "format: gdn-case v1",              // 2
      "name: tiny",                       // 3
      "N: 1",                             // 4
      "T: 2",                             // 5
      "H: 1",                             // 6
      "HV: 1",                            // 7
      "K: 2",                             // 8
      "V: 3",                             // 9
      "scale: 7.071067812e-01",           // 10
      "has_initial_state: 0",             // 11
      "tensor q 4 1 2 1 2",               // 12
      "1.0 -0.5 0.25 2.0",                // 13
      "tensor k 4 1 2 1 2",               // 14
      "0.5 1.5 -1.0 0.75",                // 15
      "tensor v 4 1 2 1 3",               // 16
      "1 2 3 4 5 6",                      // 17
      "tensor a 3 1 2 1",                 // 18
      "0.1 -0.2",                         // 19
      "tensor b 3 1 2 1",                 // 20
      "0.3 0.4",                          // 21
      "tensor A_log 1 1",                 // 22
      "0.5",                              // 23
      "tensor dt_bias 1 1",               // 24
      "-3.0",                             // 25
      "tensor g 3 1 2 1",                 // 26
      "-0.1 -0.2",                        // 27
      "tensor beta 3 1 2 1",              // 28
      "0.5 0.6",                          // 29
      "tensor o 4 1 2 1 3",               // 30
      "1.0e-01 2.0e-01 3.0e-01 4.0e-01",  // 31
      "5.0e-01 6.0e-01",                  // 32
      "tensor final_state 4 1 1 2 3",     // 33
      "1 2 3 4 5 6",                      // 34
  };
}

class GoldenFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kvb_golden_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::vector<std::string>& lines) {
    const std::string path = (dir_ / ("case" + std::to_string(count_++) + ".gdn")).string();
    std::ofstream out(path);
    for (const std::string& l : lines) out << l << "\n";
    return path;
  }

  /// Expects load_golden_case to throw GoldenFormatError whose message starts "path:line:" and contains `what`.
  void expect_error(const std::vector<std::string>& lines, int line, const std::string& what) {
    const std::string path = write(lines);
    try {
      load_golden_case(path);
      ADD_FAILURE() << "no error; expected line " << line << " '" << what << "'";
    } catch (const GoldenFormatError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path + ":" + std::to_string(line) + ": ", 0), 0u) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }

  fs::path dir_;
  int count_ = 0;
};

TEST_F(GoldenFormat, TinyCaseParses) {
  const GoldenCase c = load_golden_case(write(tiny_case()));
  EXPECT_EQ(c.name, "tiny");
  EXPECT_EQ(c.N, 1);
  EXPECT_EQ(c.T, 2);
  EXPECT_EQ(c.shape.head_dim_v, 3);
  EXPECT_FALSE(c.has_initial_state);
  EXPECT_EQ(c.tensor("o").values, (std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}));
  EXPECT_EQ(c.tensor("v").slice({0, 1}), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(golden_initial_state(c, 0), std::vector<double>(6, 0.0));
  EXPECT_THROW(c.tensor("states"), GoldenFormatError);
}

TEST_F(GoldenFormat, TruncatedValues) {
  std::vector<std::string> l = tiny_case();
  l[31] = "5.0e-01";  // o loses one value; the next tensor line (33) finds it short
  expect_error(l, 33, "tensor 'o' [1,2,1,3] expects 6 values, found 5");
  l = tiny_case();
  l[33] = "1 2 3 4 5";  // file ends inside final_state
  expect_error(l, 34, "expects 6 values, found 5 before the end of the file");
  l = tiny_case();
  l[31] = "1.0e-01 2.0e-01 3.0e-01 4.0e-01 5.0e-01";  // one value too many
  expect_error(l, 32, "more than 6 values");
  l = tiny_case();
  l.insert(l.begin() + 13, "0.25");  // a line past q's 4 values, before k's tensor line
  expect_error(l, 14, "tensor 'q' [1,2,1,2] has more than 4 values");
}

TEST_F(GoldenFormat, WrongDims) {
  std::vector<std::string> l = tiny_case();
  l[11] = "tensor q 4 1 2 1 3";
  expect_error(l, 12, "tensor 'q' must have dims [N,T,H,K] = [1,2,1,2], got [1,2,1,3]");
  l = tiny_case();
  l[32] = "tensor final_state 4 1 1 2";  // rank 4 with three dims
  expect_error(l, 33, "needs 4 dims, got 3");
}

TEST_F(GoldenFormat, BadNumber) {
  std::vector<std::string> l = tiny_case();
  l[14] = "0.5 1.5x -1.0 0.75";
  expect_error(l, 15, "expected a finite number, got '1.5x'");
  l = tiny_case();
  l[16] = "1 2 nan 4 5 6";
  expect_error(l, 17, "got 'nan'");
  l = tiny_case();
  l[9] = "scale: fast";  // the field's own line
  expect_error(l, 10, "header field 'scale' must be a positive number");
}

TEST_F(GoldenFormat, MissingHeaderField) {
  std::vector<std::string> l = tiny_case();
  l.erase(l.begin() + 6);  // HV; the first tensor is now line 11
  expect_error(l, 11, "header field 'HV' missing");
  l = tiny_case();
  l.erase(l.begin() + 10);  // has_initial_state
  expect_error(l, 11, "header field 'has_initial_state' missing");
  l = tiny_case();
  l[1] = "format: gdn-case v2";  // a field set wrong: its own line; a field missing: the first tensor's
  expect_error(l, 2, "header field 'format' must be 'gdn-case v1'");
  l = tiny_case();
  l[6] = "HV: 0";
  expect_error(l, 7, "header field 'HV' must be an integer in [1, 4096], got '0'");
  l = tiny_case();
  l[10] = "has_initial_state: 1";  // then initial_state is required
  expect_error(l, 34, "missing tensor 'initial_state'");
}

TEST_F(GoldenFormat, UnknownTensorRankOrName) {
  std::vector<std::string> l = tiny_case();
  l[11] = "tensor q 7 1 2 1 2 1 1 1";
  expect_error(l, 12, "tensor 'q' must have rank 4 [N,T,H,K], got rank '7'");
  l = tiny_case();
  l[17] = "tensor a x 1 2 1";
  expect_error(l, 18, "got rank 'x'");
  l = tiny_case();
  l[21] = "tensor A_bias 1 1";
  expect_error(l, 22, "unknown tensor 'A_bias'");
  l = tiny_case();
  l.resize(32);  // no final_state
  expect_error(l, 32, "missing tensor 'final_state'");
  l = tiny_case();
  l[4] = "T 2";
  expect_error(l, 5, "expected '# comment', 'key: value' or 'tensor NAME RANK D0 D1 ...'");
}

TEST_F(GoldenFormat, AFileCutInItsLastNumberIsMalformed) {
  // Cut in the middle of its last number the file still holds as many values, and would only fail the comparison:
  // the missing line end gives it away.
  std::vector<std::string> lines = tiny_case();
  lines.back() = "1 2 3 4 5 6.25";
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  const std::string path = (dir_ / "cut.gdn").string();
  std::ofstream(path) << text.substr(0, text.size() - 2);  // "... 5 6.2", no line end
  try {
    load_golden_case(path);
    ADD_FAILURE() << "a file cut short was read";
  } catch (const GoldenFormatError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":34: the last line has no line end (a file cut short?)");
  }
  EXPECT_THROW(load_golden_case(dir_.string()), std::runtime_error);  // a folder
}

TEST_F(GoldenFormat, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = (dir_ / "pipe.gdn").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(golden_case_unreadable(fifo),
            fifo + ": not a regular file (allowed: a gdn-case v1 file such as tests/data/golden/draft4.gdn)");
  EXPECT_THROW(load_golden_case(fifo), std::runtime_error);
}

TEST_F(GoldenFormat, ACaseTheKernelsDoNotTakeIsSkippedByTheGpuWithTheReason) {
  const GoldenCase tiny = load_golden_case(write(tiny_case()));  // K = 2, V = 3
  EXPECT_EQ(golden_gpu_skip_reason(tiny),
            "the GPU kernels do not take this shape: head_dim_k = 2 is not supported (allowed: 32, 64, 128, 256)");
  for (const auto& e : fs::directory_iterator(std::string(KVB_TEST_DATA_DIR) + "/golden")) {
    if (e.path().extension() != ".gdn") continue;
    EXPECT_EQ(golden_gpu_skip_reason(load_golden_case(e.path().string())), "") << e.path();
  }
  EXPECT_EQ(golden_gpu_engines(), (std::vector<std::string>{"gpu-recurrent", "gpu-kvbuffer"}));
}

TEST_F(GoldenFormat, UnreadableFileIsNotAFormatError) {
  EXPECT_THROW(load_golden_case((dir_ / "absent.gdn").string()), std::runtime_error);
  try {
    load_golden_case((dir_ / "absent.gdn").string());
  } catch (const GoldenFormatError&) {
    ADD_FAILURE() << "a missing file is not a format error";
  } catch (const std::runtime_error&) {
  }
}

}  // namespace
}  // namespace kvb::ref
