// Device-to-reference helpers shared by the checks that run before timing (decode_check, verify_check and their raw
// forms): the launch on NaN-poisoned outputs, and tokens, gate parameters, states and KVBuffer slots read back from
// the device as float64 reference inputs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/gdn_params.h"
#include "reference/gdn_reference.h"
#include "core/tolerances.h"

namespace kvb {

/// Result of a pre-timing check of a launch against the float64 reference. Errors are per head relative to the head's
/// largest reference magnitude (ref::max_rel_err); what state_err covers is said by each check.
struct LaunchCheck {
  double state_err = 0;         ///< states, checkpoints, buffered or draft deltas compared
  double o_err = 0;             ///< outputs of the checked rows
  bool outputs_written = true;  ///< every output element of the launch was written (poisoned with NaN before)
  int rows = 0;                 ///< rows compared
  int folded_rows = 0;          ///< KVBuffer verify: compared rows whose second verify folded a due buffer
  std::string detail;           ///< why it failed ("" when it passed)
  bool pass() const { return detail.empty(); }
};

/// Exact values of bf16 or fp32 elements, as double.
std::vector<double> to_double(const std::vector<bf16>& x);
std::vector<double> to_double(const std::vector<float>& x);

/// `n` fp32 values at device pointer `p` as double (synchronous). Throws CudaError.
std::vector<double> download_double(const float* p, size_t n);
/// Elements [first, first + n) of a device state array of `d` elements (fp32 or bf16), widened to double.
std::vector<double> download_state(const void* p, StateDtype d, size_t first, size_t n);
/// `x` on the device as `d` elements (rounded to nearest even), as their bytes (synchronous). Throws CudaError.
DeviceBuffer<unsigned char> upload_state(const std::vector<double>& x, StateDtype d);

/// Poisons the `bytes` bytes of outputs at device pointer `o` with NaN (0xff bytes: NaN in bf16 and fp32), runs
/// `launch()` (which enqueues on `stream`), waits for the stream, and returns the outputs in dtype `dt` as double;
/// `written` turns false on any NaN or infinity (poison the launch left). Throws CudaError.
std::vector<double> outputs_of_poisoned_launch(void* o, size_t bytes, OutputDtype dt, cudaStream_t stream,
                                               const std::function<void()>& launch, bool& written);

/// Token `index` of a launch's inputs (index = row for decode, row * m + draft for verify), read back from the
/// device: q, k [H][K], v [HV][V], a, b [HV]. Throws CudaError.
ref::TokenRaw download_token(const TokenInputs& in, const GdnShape& s, size_t index);

/// The launch's gate parameters A_log, dt_bias [HV] and its query scale. Throws CudaError.
ref::GateParams download_gate_params(const TokenInputs& in, const GdnShape& s);

/// The KVBuffer of `slot` in `pool` with its first `entries` buffered entries (keys l2-normalised as the kernels
/// do, deltas, log-decays) and its checkpoint (checkpoint row `slot`; with_checkpoint false: a stateless slot, S0 = 0,
/// left empty and nothing read). Throws CudaError.
ref::KVBufferSlot download_kvbuffer_slot(const KVBufferPool& pool, const GdnShape& s, int slot, int entries,
                                         bool with_checkpoint = true);

/// "" when every |got[i] - want[i]| <= 1e-5 max(1, |want[i]|) (log-decays, which are computed in fp32 and stored),
/// else a one-line message naming `what` and the first element that differs. Sizes must match (else a message).
std::string log_decay_mismatch(const std::vector<double>& want, const std::vector<double>& got,
                               const std::string& what);

/// How stored bf16 state elements compare with the float64 reference's, rounded to bf16 where the kernel stores them
/// (DESIGN.md section 4): `equal`, `one` bf16 unit off, or `more`. The kernel's fp32 value and the float64 one round
/// to neighbouring bf16 values where they straddle a rounding boundary; and an element left tiny by cancellation
/// carries the fp32 rounding of its large terms, so an element within one bf16 unit (of the larger magnitude) plus
/// tol::kStateFp32 of its head's largest reference element counts as one unit off.
struct Bf16StateUnits {
  size_t equal = 0, one = 0, more = 0;
  /// Counts the elements of `got` against `want_rounded`, both [heads][elements of a head] as double. Throws
  /// std::invalid_argument when their sizes differ or do not split into `heads` heads.
  void add(const std::vector<double>& want_rounded, const std::vector<double>& got, int64_t heads);
  size_t compared() const { return equal + one + more; }
};

/// "" when every output was written and both errors are within tolerance (states: tol_state, outputs: tol_o), else
/// the first reason, one line.
std::string check_verdict(bool outputs_written, double state_err, double o_err, double tol_o,
                          double tol_state = tol::kStateFp32);

/// Rows 0 and rows - 1, plus `extra` when it is in [0, rows): sorted, without repeats.
std::vector<int> rows_to_check(int rows, int extra = -1);

}  // namespace kvb
