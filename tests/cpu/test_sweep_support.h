// Test support for the sweep engine tests: a temporary folder and a fake experiment kind with decode-like axes.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "harness/sweep/experiment_kind.h"

namespace kvb::test {

/// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kvb_sweep_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Validator: an integer >= lo.
inline std::function<std::string(const std::string&)> int_at_least(const std::string& axis, long long lo) {
  return [axis, lo](const std::string& v) -> std::string {
    try {
      size_t used = 0;
      const long long x = std::stoll(v, &used);
      if (used == v.size() && x >= lo) return "";
    } catch (const std::exception&) {
    }
    return axis + " must be an integer >= " + std::to_string(lo);
  };
}

/// The fake kind's latency for a point: a closed form the tests recompute (not a measured value).
inline double fake_latency_us(const Point& p) {
  const double buffer = p.get("buffer_size").empty() ? 1.0 : double(p.get_int("buffer_size"));
  return 10.0 + 0.5 * double(p.get_int("batch")) * (1.0 + 1.0 / buffer) + 0.001 * double(p.get_int("seed"));
}

/// A decode-like kind: axes variant, batch, buffer_size (not for recurrent), heads_qk, heads_v, head_dim_k, seed;
/// validate requires heads_v % heads_qk == 0; run returns fake_latency_us-based columns and throws for batch 3
/// (its message holds a comma, a quote and a newline) unless `fail_batch` is changed.
struct FakeKind {
  long long fail_batch = 3;
  int calls = 0;

  ExperimentKind kind() {
    ExperimentKind k;
    k.name = "fake";
    k.axes = {
        {"variant", {"recurrent", "kvbuffer"},
         [](const std::string& v) -> std::string {
           return v == "recurrent" || v == "kvbuffer" ? "" : "variant must be one of: recurrent, kvbuffer";
         }},
        {"batch", {"1"}, int_at_least("batch", 1)},
        {"buffer_size", {"4"}, int_at_least("buffer_size", 1)},
        {"heads_qk", {"16"}, int_at_least("heads_qk", 1)},
        {"heads_v", {"32"}, int_at_least("heads_v", 1)},
        {"head_dim_k", {"128"},
         [](const std::string& v) -> std::string {
           return v == "32" || v == "64" || v == "128" || v == "256" ? "" : "head_dim_k must be one of 32, 64, 128, 256";
         }},
        {"seed", {"0"}, int_at_least("seed", 0)},
    };
    k.result_columns = {"latency_us_median", "latency_us_p10", "latency_us_p90", "note"};
    k.applies = [](const std::string& variant, const std::string& axis) {
      return !(variant == "recurrent" && axis == "buffer_size");
    };
    k.validate = [](const Point& p) -> std::string {
      if (p.get_int("heads_v") % p.get_int("heads_qk") != 0) return "heads_v must be a multiple of heads_qk";
      return "";
    };
    k.run = [this](const Point& p, SweepContext& ctx) -> Row {
      ++calls;
      if (p.get_int("batch") == fail_batch) throw std::runtime_error("out of memory, \"batch\" 3\nsecond line");
      const double t = fake_latency_us(p);
      return {{"latency_us_median", std::to_string(t)},
              {"latency_us_p10", std::to_string(t * 0.9)},
              {"latency_us_p90", std::to_string(t * 1.1)},
              {"note", "copy " + std::to_string(ctx.copy_gbps)}};
    };
    return k;
  }
};

}  // namespace kvb::test
