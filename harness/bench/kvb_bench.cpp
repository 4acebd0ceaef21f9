// kvb_bench: a Google Benchmark front end over the harness's own problems (harness/workloads/) and timing
// (harness/measure/): the GDN kernel families at fixed shapes (Qwen3-Next at TP1, one layer, batch 64 and 256):
// recurrent decode, KVBuffer decode (B = 16, staggered phases) and the standalone KVBuffer flush. Each iteration is
// one launch timed with the harness's EventTimer (manual time); counters: bytes_per_second (byte model,
// byte_model/byte_model.h), model_bytes and floor_us (model bytes at the bandwidth measured at start-up).
// Cold L2: the problem holds as many copies of its pools as cold_l2_groups() gives, and successive iterations rotate
// through them.
// Usage: kvb_bench [--device=N] [Google Benchmark flags, e.g. --benchmark_out=r.json --benchmark_out_format=json].
// Without a CUDA device it prints a skip message and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "byte_model/byte_model.h"
#include "core/cuda_check.h"
#include "harness/measure/bandwidth.h"
#include "harness/measure/device_info.h"
#include "harness/measure/event_timer.h"
#include "harness/measure/step_timing.h"
#include "harness/workloads/decode_problem.h"
#include "kernels/gdn_params.h"

namespace kvb {
namespace {

constexpr int kBufferSize = 16;  ///< B of the KVBuffer benchmarks

/// Device and bandwidth shared by every benchmark (measured once at start-up).
struct BenchDevice {
  int device = 0;
  double copy_gbps = 0, read_gbps = 0;
};

/// One layer of the Qwen3-Next shape with as many groups (pool copies) as cold L2 needs (cold_l2_groups).
DecodeConfig bench_config(const BenchDevice& dev, DecodeVariant variant, int batch) {
  DecodeConfig c;
  c.variant = variant;
  c.batch = batch;
  c.buffer_size = variant == DecodeVariant::kvbuffer ? kBufferSize : 1;
  c.staggered = true;
  c.layers = 1;
  c.groups = cold_l2_groups(double(batch) * double(c.shape.state_bytes()), dev.device);
  return c;
}

/// Times `launch(set, stream)` per iteration, rotating over `sets`, and sets the counters from `bytes` per launch.
void time_launches(benchmark::State& state, const BenchDevice& dev, int sets, const ByteCount& bytes,
                   const std::function<cudaError_t(int, cudaStream_t)>& launch) {
  try {
    CudaStream stream;
    EventTimer timer;
    for (int s = 0; s < sets; ++s) KVB_CUDA_CHECK(launch(s, stream.get()));  // warm-up, checks the launch
    KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    int set = 0;
    for (auto _ : state) {
      const float ms = timer.ms(stream.get(), [&](cudaStream_t st) { KVB_CUDA_CHECK(launch(set, st)); });
      state.SetIterationTime(double(ms) * 1e-3);
      set = (set + 1) % sets;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.SetBytesProcessed(int64_t(bytes.total()) * int64_t(state.iterations()));
  state.counters["model_bytes"] = bytes.total();
  state.counters["floor_us"] = floor_us(bytes, dev.copy_gbps, dev.read_gbps);
  state.counters["sets"] = sets;
}

void bm_recurrent_decode(benchmark::State& state, const BenchDevice& dev) {
  const DecodeProblem prob(bench_config(dev, DecodeVariant::recurrent, int(state.range(0))));
  const auto& c = prob.config();
  time_launches(state, dev, prob.sets(), recurrent_decode_bytes(c.shape, c.batch, c.o_dtype),
                [&](int set, cudaStream_t s) { return launch_recurrent_decode(prob.recurrent_params(set), s); });
}

/// Positions stay fixed (no advance between launches): with staggered phases row i holds i mod B entries, so each
/// launch is the cycle-mean mix of buffer reads, appends and flushes (batch a multiple of B).
void bm_kvbuffer_decode(benchmark::State& state, const BenchDevice& dev) {
  const DecodeProblem prob(bench_config(dev, DecodeVariant::kvbuffer, int(state.range(0))));
  const auto& c = prob.config();
  state.SetLabel(fmt::format("B={} staggered", c.buffer_size));
  time_launches(state, dev, prob.sets(), kvbuffer_decode_cycle_bytes(c.shape, c.batch, c.buffer_size, c.o_dtype),
                [&](int set, cudaStream_t s) { return launch_kvbuffer_decode(prob.kvbuffer_params(set), s); });
}

/// Every row holds B - 1 entries (a full buffer) and is flushed: checkpoint read and written, the entries read, plus
/// slot and fill (4 bytes each) per row.
void bm_kvbuffer_flush(benchmark::State& state, const BenchDevice& dev) {
  const DecodeProblem prob(bench_config(dev, DecodeVariant::kvbuffer, int(state.range(0))));
  const auto& c = prob.config();
  const int entries = c.buffer_size - 1;
  const std::vector<int32_t> full(size_t(c.batch), entries);
  for (int g = 0; g < c.groups; ++g)
    KVB_CUDA_CHECK(cudaMemcpy(prob.fill(g), full.data(), full.size() * 4, cudaMemcpyHostToDevice));
  const double rows = c.batch;
  ByteCount bytes;
  bytes.read = rows * (double(c.shape.state_bytes()) + entries * kvbuffer_entry_bytes(c.shape) + 8.0);
  bytes.write = rows * double(c.shape.state_bytes());
  state.SetLabel(fmt::format("{} entries", entries));
  time_launches(state, dev, prob.sets(), bytes, [&](int set, cudaStream_t s) {
    KVBufferFlushParams p;
    p.shape = c.shape;
    p.count = c.batch;
    p.slot = prob.slots();
    p.pool = prob.kvbuffer_params(set).pool;
    return launch_kvbuffer_flush(p, s);
  });
}

/// Removes "--device=N" / "--device N" from argv (Google Benchmark rejects flags it does not know); -1 when absent,
/// -2 when malformed.
int take_device_flag(int& argc, char** argv) {
  int device = -1;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string value;
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      value = argv[i] + 9;
    } else if (std::strcmp(argv[i], "--device") == 0) {
      value = i + 1 < argc ? argv[++i] : "";
    } else {
      argv[out++] = argv[i];
      continue;
    }
    char* end = nullptr;
    const long d = std::strtol(value.c_str(), &end, 10);
    device = (value.empty() || *end || d < 0 || d > 1023) ? -2 : int(d);
  }
  argc = out;
  return device;
}

}  // namespace
}  // namespace kvb

int main(int argc, char** argv) {
  using namespace kvb;
  const int device_flag = take_device_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (device_flag == -2) {
    fmt::print(stderr, "kvb_bench: --device: expected a device index (allowed: 0..N-1)\n");
    return 2;
  }
  const int count = cuda_device_count();
  if (count == 0) {
    fmt::print("kvb_bench: no CUDA device found; skipping the benchmarks\n");
    return 0;
  }
  static BenchDevice dev;
  dev.device = device_flag < 0 ? 0 : device_flag;
  if (dev.device >= count) {
    fmt::print(stderr, "kvb_bench: --device {}: there are {} CUDA devices (allowed: 0..{})\n", dev.device, count,
               count - 1);
    return 2;
  }
  try {
    KVB_CUDA_CHECK(cudaSetDevice(dev.device));
    const DeviceInfo info = query_device_info(dev.device);
    dev.copy_gbps = measure_copy_gbps(dev.device);
    dev.read_gbps = measure_read_gbps(dev.device);
    benchmark::AddCustomContext("gpu", info.name);
    benchmark::AddCustomContext("copy_gbps", fmt::format("{:.1f}", dev.copy_gbps));
    benchmark::AddCustomContext("read_gbps", fmt::format("{:.1f}", dev.read_gbps));
  } catch (const std::exception& e) {
    fmt::print(stderr, "kvb_bench: {}\n", e.what());
    return 1;
  }

  using Fn = void (*)(benchmark::State&, const BenchDevice&);
  const std::pair<const char*, Fn> benches[] = {{"recurrent_decode", bm_recurrent_decode},
                                                {"kvbuffer_decode", bm_kvbuffer_decode},
                                                {"kvbuffer_flush", bm_kvbuffer_flush}};
  for (const auto& [name, fn] : benches)
    benchmark::RegisterBenchmark(name,
                                 [fn = fn](benchmark::State& st) {
                                   try {
                                     fn(st, dev);
                                   } catch (const std::exception& e) {  // building the problem failed
                                     st.SkipWithError(e.what());
                                   }
                                 })
        ->ArgName("batch")
        ->Arg(64)
        ->Arg(256)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
