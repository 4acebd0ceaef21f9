// Reader of gdn-case v1 golden files (tests/data/golden/README.md) and the float64 reference's check against them.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gdn_shape.h"
#include "reference/gdn_reference.h"
#include "core/tolerances.h"

namespace kvb::ref {

/// A malformed golden file; what() names the file, the line and what was expected. Maps to exit code 2.
struct GoldenFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One tensor of a golden case, row-major.
struct GoldenTensor {
  std::vector<int64_t> dims;
  std::vector<double> values;
  /// Product of dims.
  int64_t numel() const;
  /// Copy of the trailing block at a leading index: index has r < rank entries, the result holds the values of
  /// dims[r..] at that index (row-major). Throws std::out_of_range on a bad index.
  std::vector<double> slice(const std::vector<int64_t>& index) const;
};

/// A parsed gdn-case v1 file. Tensors: q, k [N,T,H,K]; v [N,T,HV,V]; a, b, g, beta [N,T,HV]; A_log, dt_bias [HV];
/// initial_state [N,HV,K,V] (when has_initial_state); o [N,T,HV,V]; final_state [N,HV,K,V]; states [N,T,HV,K,V]
/// (optional).
struct GoldenCase {
  std::string path;
  std::string name;
  std::map<std::string, std::string> meta;  ///< every `key: value` line
  std::map<std::string, GoldenTensor> tensors;
  GdnShape shape;
  int N = 0, T = 0;
  double scale = 0, l2norm_eps = 1e-6;
  bool has_initial_state = false;
  bool qk_l2norm = true;  ///< `qk_l2norm` header field (optional, default 1): q and k are l2-normalised

  bool has(const std::string& tensor) const { return tensors.count(tensor) != 0; }
  /// Throws GoldenFormatError naming the tensor when absent.
  const GoldenTensor& tensor(const std::string& name) const;
};

/// "" when `path` is a file this process can open, else why not (a folder, or the system's reason), naming the path
/// and the allowed files.
std::string golden_case_unreadable(const std::string& path);

/// Parses a gdn-case v1 file; checks the header fields, every tensor's rank, dims (against N, T, H, HV, K, V) and
/// value count, and that the last line ends with a line end (a file cut in the middle of its last number would
/// otherwise parse). Throws GoldenFormatError on malformed input, std::runtime_error (golden_case_unreadable's
/// reason) when the file cannot be read or is a directory.
GoldenCase load_golden_case(const std::string& path);

/// One tensor compared against the golden values.
struct TensorCheck {
  std::string engine;  ///< "reference" or "gpu"
  std::string tensor;  ///< "o", "final_state", "states"
  double max_rel_err = 0;  ///< per head, relative to that head's largest golden magnitude (DESIGN.md section 4)
  double tolerance = 0;
  bool pass() const { return max_rel_err <= tolerance; }
};

/// Raw inputs of sequence n, token t: q, k [H][K], v [HV][V], a, b [HV]. Throws std::out_of_range on a bad index.
TokenRaw golden_token(const GoldenCase& c, int n, int t);

/// The file's gate parameters: A_log, dt_bias [HV], scale, l2norm_eps.
GateParams golden_gate_params(const GoldenCase& c);

/// Sequence n, token t prepared as the golden case prepares it: q^, k^ l2-normalised (q^ scaled by scale; without
/// normalisation when qk_l2norm is 0, q still scaled), and the file's prepared g and beta [HV] (which some cases
/// override, so a and b alone would not reproduce them).
TokenPrepared golden_prepared_token(const GoldenCase& c, int n, int t);

/// Initial state of sequence n, [HV][K][V]; zeros when the case has none.
std::vector<double> golden_initial_state(const GoldenCase& c, int n);

/// Tolerance of the float64 reference against the golden float64 oracle (max_rel_err, per head): tol::kGolden.
constexpr double kGoldenReferenceTolerance = tol::kGolden;

/// Runs the float64 reference (recurrent_decode on golden_prepared_token: the file's prepared g and beta, so
/// overriding cases hold) over every token of every sequence, from initial_state (or zero), and compares o
/// [N,T,HV,V] (N*T*HV heads), final_state [N,HV,K,V] (N*HV heads) and, when present, states [N,T,HV,K,V] (N*T*HV
/// heads) with max_rel_err. Tolerance kGoldenReferenceTolerance (1e-6). Returns one TensorCheck per tensor.
std::vector<TensorCheck> check_golden_reference(const GoldenCase& c);

}  // namespace kvb::ref
