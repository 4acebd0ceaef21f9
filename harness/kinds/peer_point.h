// A peer decode point measured by the peer runner (peers/run_peer.py) in its own process, and the row kvb writes for
// it: the decode kind's columns, the floor from this run's bandwidths, and the versions the runner reports
// (docs/MEASURING.md, "Peers").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/kinds/peer_request.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// How to start the peer runner.
struct PeerRunner {
  std::string python = "python3";          ///< the interpreter (looked up on PATH)
  std::string script;                      ///< peers/run_peer.py
  std::vector<std::string> peer_modules;   ///< files passed as --peer-module (peers defined elsewhere: stand-ins)
  double timeout_s = 900;                  ///< a point's runner is stopped after this (first-use compiles included)
};

/// The runner of this checkout: $KVB_PYTHON (else python3) and peers/run_peer.py of the working directory, else of
/// the source tree kvb was built from. Throws UsageError when neither exists.
PeerRunner default_peer_runner();

/// Whether a peer can run here: `ok` with its versions in `text`, or the one-line reason it cannot.
struct PeerProbe {
  bool ok = false;
  std::string text;
};

/// Asks the runner (run_peer.py probe) about each of `variants` on CUDA device `device`, in one process. A runner
/// that cannot be started or answers nothing for a variant gives that variant ok = false with the reason.
std::map<std::string, PeerProbe> probe_peers(const PeerRunner& runner, const std::vector<std::string>& variants,
                                             int device);

/// The decode kind's result columns a peer row adds (empty in kvb's own rows): package, package_version,
/// torch_version, triton_version, peer_conventions.
const std::vector<std::string>& peer_result_columns();

/// Measures one peer decode point: writes the request and its check case into a new temporary folder, runs
/// `run_peer.py run`, and turns its result.csv into the decode kind's row: the timing and check columns as the
/// runner measured them (discarded_samples: samples it dropped under the SM clock floor, empty when it could not read
/// the clock), state_dtype fp32, output_dtype bf16, entry_dtypes empty (a peer buffers nothing), the byte model and
/// floor of recurrent decode at the bandwidths of `ctx`, l2 and l2_rotation (`req.groups`), no DRAM bytes
/// (cupti_status says why), the SM clock sampled when the runner starts and ends its timing (throttled as kvb's own
/// points), and the versions. The row's status is the runner's ("failed: check failed: ..." for a peer off the
/// reference, "skipped: ..." for one that cannot run); a runner that exits without a result, or runs past its time
/// limit, gives a failed status naming why. The folder is removed. Throws std::runtime_error when the request cannot be
/// written.
Row run_peer_decode(const PeerDecodeRequest& req, const PeerRunner& runner, const SweepContext& ctx);

}  // namespace kvb
