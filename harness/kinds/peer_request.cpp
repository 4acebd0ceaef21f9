// request.json of a peer decode point (peer_request.h).
#include "harness/kinds/peer_request.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/tolerances.h"
#include "harness/measure/step_timing.h"
#include "harness/workloads/peer_case.h"

namespace kvb {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') out += std::string("\\") + ch;
    else if (c < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += ch;
  }
  return out + "\"";
}

std::string write_peer_request(const PeerDecodeRequest& r, const std::string& folder) {
  const PeerDecodeCase c = write_peer_decode_case(r.shape, r.batch, r.seed, folder);
  std::string rows, tensors;
  for (int row : c.check_rows) rows += (rows.empty() ? "" : ", ") + std::to_string(row);
  for (const PeerTensor& t : c.tensors) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    tensors += fmt::format("{}    {}: {{\"file\": {}, \"dtype\": {}, \"shape\": [{}]}}", tensors.empty() ? "" : ",\n",
                           json_string(t.name), json_string(t.file), json_string(t.dtype), shape);
  }
  const std::filesystem::path dir(folder);
  const std::string text = fmt::format(
      R"({{
  "kvb_peer_request": 1,
  "kind": "decode",
  "variant": {variant},
  "shape": {{"heads_qk": {H}, "heads_v": {HV}, "head_dim_k": {K}, "head_dim_v": {V}}},
  "batch": {batch}, "layers": {layers}, "groups": {groups}, "seed": {seed},
  "l2": {l2}, "l2_bytes": {l2_bytes}, "device": {device},
  "sampling": {{"min_samples": {min_samples}, "max_samples": {max_samples}, "max_seconds": {max_seconds},
               "target_noise_pct": {noise}, "min_clock_fraction": {min_clock_fraction},
               "max_throttled_seconds": {max_throttled_seconds}}},
  "steps": {{"cycle": 1, "warmup_cycles": {warmup_cycles}, "warmup_min_ms": {warmup_ms}, "sample_min_ms": {sample_ms}}},
  "tolerance": {{"state": {tol_state}, "output": {tol_o}}},
  "check_rows": [{rows}],
  "phase_file": {phase},
  "tensors": {{
{tensors}
  }}
}}
)",
      fmt::arg("variant", json_string(r.variant)), fmt::arg("H", r.shape.heads_qk), fmt::arg("HV", r.shape.heads_v),
      fmt::arg("K", r.shape.head_dim_k), fmt::arg("V", r.shape.head_dim_v), fmt::arg("batch", r.batch),
      fmt::arg("layers", r.layers), fmt::arg("groups", r.groups), fmt::arg("seed", r.seed),
      fmt::arg("l2", json_string(r.l2)), fmt::arg("l2_bytes", r.l2_bytes), fmt::arg("device", r.device),
      fmt::arg("min_samples", r.sampling.min_samples), fmt::arg("max_samples", r.sampling.max_samples),
      fmt::arg("max_seconds", r.sampling.max_seconds), fmt::arg("noise", r.sampling.target_noise_pct),
      fmt::arg("min_clock_fraction", r.sampling.min_clock_fraction),
      fmt::arg("max_throttled_seconds", r.sampling.max_throttled_seconds),
      fmt::arg("warmup_cycles", kWarmupCycles), fmt::arg("warmup_ms", kMinWarmupMs),
      fmt::arg("sample_ms", kMinSampleMs), fmt::arg("tol_state", tol::kStateFp32),
      fmt::arg("tol_o", tol::output(OutputDtype::bf16)), fmt::arg("rows", rows),
      fmt::arg("phase", json_string((dir / "phase").string())), fmt::arg("tensors", tensors));
  const std::string path = (dir / "request.json").string();
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write the peer request", path));
  return path;
}

}  // namespace kvb
