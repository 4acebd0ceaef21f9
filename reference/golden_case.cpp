// Reader of gdn-case v1 golden files (tests/data/golden/README.md) and the reference's check against them.
#include "reference/golden_case.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kvb::ref {
namespace {

const char* const kFormat = "gdn-case v1";

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool parse_double(const std::string& w, double& out) {
  if (w.empty()) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtod(w.c_str(), &end);
  // Denormal results set ERANGE but are exact enough; overflow gives inf and is rejected below.
  return end == w.c_str() + w.size() && std::isfinite(out);
}

bool parse_int(const std::string& w, int64_t& out) {
  if (w.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(w.c_str(), &end, 10);
  if (end != w.c_str() + w.size() || errno == ERANGE) return false;
  out = v;
  return true;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

/// Builds the reader's errors: "path:line: what".
struct Where {
  const std::string& path;
  int64_t line = 0;
  GoldenFormatError error(const std::string& what) const {
    return GoldenFormatError(path + ":" + std::to_string(line) + ": " + what);
  }
};

/// Expected dims of each known tensor, by the header's N, T, H, HV, K, V.
std::map<std::string, std::pair<std::vector<int64_t>, std::string>> expected_dims(const GoldenCase& c) {
  const int64_t N = c.N, T = c.T, H = c.shape.heads_qk, HV = c.shape.heads_v, K = c.shape.head_dim_k,
                V = c.shape.head_dim_v;
  return {
      {"q", {{N, T, H, K}, "[N,T,H,K]"}},
      {"k", {{N, T, H, K}, "[N,T,H,K]"}},
      {"v", {{N, T, HV, V}, "[N,T,HV,V]"}},
      {"a", {{N, T, HV}, "[N,T,HV]"}},
      {"b", {{N, T, HV}, "[N,T,HV]"}},
      {"A_log", {{HV}, "[HV]"}},
      {"dt_bias", {{HV}, "[HV]"}},
      {"g", {{N, T, HV}, "[N,T,HV]"}},
      {"beta", {{N, T, HV}, "[N,T,HV]"}},
      {"initial_state", {{N, HV, K, V}, "[N,HV,K,V]"}},
      {"o", {{N, T, HV, V}, "[N,T,HV,V]"}},
      {"final_state", {{N, HV, K, V}, "[N,HV,K,V]"}},
      {"states", {{N, T, HV, K, V}, "[N,T,HV,K,V]"}},
  };
}

/// Header field lines: key -> the line that set it.
using HeaderLines = std::map<std::string, int64_t>;

/// Where a header field's error points: the field's own line, or `at` (the first tensor's, where the header ends)
/// for a field the header lacks.
Where field_at(const Where& at, const HeaderLines& lines, const std::string& key) {
  const auto it = lines.find(key);
  return Where{at.path, it == lines.end() ? at.line : it->second};
}

int64_t header_int(const GoldenCase& c, const Where& header_end, const HeaderLines& lines, const std::string& key,
                   int64_t lo, int64_t hi) {
  const Where at = field_at(header_end, lines, key);
  const auto it = c.meta.find(key);
  if (it == c.meta.end()) {
    throw at.error("header field '" + key + "' missing (required before the first tensor)");
  }
  int64_t v = 0;
  if (!parse_int(it->second, v) || v < lo || v > hi) {
    throw at.error("header field '" + key + "' must be an integer in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "], got '" + it->second + "'");
  }
  return v;
}

double header_positive(const GoldenCase& c, const Where& header_end, const HeaderLines& lines, const std::string& key,
                       bool required, double dflt) {
  const Where at = field_at(header_end, lines, key);
  const auto it = c.meta.find(key);
  if (it == c.meta.end()) {
    if (required) throw at.error("header field '" + key + "' missing (required before the first tensor)");
    return dflt;
  }
  double v = 0;
  if (!parse_double(it->second, v) || !(v > 0)) {
    throw at.error("header field '" + key + "' must be a positive number, got '" + it->second + "'");
  }
  return v;
}

/// Validates the header once the first tensor line is reached; fills the typed fields of c.
void finish_header(GoldenCase& c, const Where& at, const HeaderLines& lines) {
  const auto fmt = c.meta.find("format");
  if (fmt == c.meta.end() || fmt->second != kFormat) {
    throw field_at(at, lines, "format")
        .error(std::string("header field 'format' must be '") + kFormat + "'" +
               (fmt == c.meta.end() ? std::string(", missing") : ", got '" + fmt->second + "'"));
  }
  const int64_t big = 1 << 20;
  c.N = int(header_int(c, at, lines, "N", 1, big));
  c.T = int(header_int(c, at, lines, "T", 1, big));
  c.shape.heads_qk = int(header_int(c, at, lines, "H", 1, 4096));
  c.shape.heads_v = int(header_int(c, at, lines, "HV", 1, 4096));
  c.shape.head_dim_k = int(header_int(c, at, lines, "K", 1, 4096));
  c.shape.head_dim_v = int(header_int(c, at, lines, "V", 1, 4096));
  if (c.shape.heads_v % c.shape.heads_qk != 0) {
    throw field_at(at, lines, "HV").error("header field 'HV' must be a multiple of H=" +
                                          std::to_string(c.shape.heads_qk) + ", got " +
                                          std::to_string(c.shape.heads_v));
  }
  c.scale = header_positive(c, at, lines, "scale", true, 0);
  c.has_initial_state = header_int(c, at, lines, "has_initial_state", 0, 1) == 1;
  c.qk_l2norm = c.meta.count("qk_l2norm") ? header_int(c, at, lines, "qk_l2norm", 0, 1) == 1 : true;
  c.l2norm_eps = header_positive(c, at, lines, "l2norm_eps", false, 1e-6);
  const auto name = c.meta.find("name");
  c.name = name != c.meta.end() ? name->second : "";
}

}  // namespace

int64_t GoldenTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<double> GoldenTensor::slice(const std::vector<int64_t>& index) const {
  if (index.size() >= dims.size()) throw std::out_of_range("GoldenTensor::slice: index rank >= tensor rank");
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= dims[i]) {
      throw std::out_of_range("GoldenTensor::slice: index " + std::to_string(index[i]) + " outside dim " +
                              std::to_string(i) + " of size " + std::to_string(dims[i]));
    }
    offset = offset * dims[i] + index[i];
  }
  int64_t block = 1;
  for (size_t i = index.size(); i < dims.size(); ++i) block *= dims[i];
  return std::vector<double>(values.begin() + offset * block, values.begin() + (offset + 1) * block);
}

const GoldenTensor& GoldenCase::tensor(const std::string& tensor_name) const {
  const auto it = tensors.find(tensor_name);
  if (it == tensors.end()) throw GoldenFormatError(path + ": no tensor '" + tensor_name + "'");
  return it->second;
}

std::string golden_case_unreadable(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st))
    return path + ": is a directory (allowed: a gdn-case v1 file such as tests/data/golden/draft4.gdn)";
  // Opening a FIFO would wait for a writer: only a regular file is opened.
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    return path + ": not a regular file (allowed: a gdn-case v1 file such as tests/data/golden/draft4.gdn)";
  if (!std::ifstream(path))
    return path + ": cannot read it: " + std::strerror(errno) +
           " (allowed: a readable gdn-case v1 file such as tests/data/golden/draft4.gdn)";
  return "";
}

GoldenCase load_golden_case(const std::string& path) {
  if (const std::string why = golden_case_unreadable(path); !why.empty()) throw std::runtime_error(why);
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read it: " + std::strerror(errno));

  GoldenCase c;
  c.path = path;
  Where at{path, 0};
  bool header_done = false;
  std::map<std::string, std::pair<std::vector<int64_t>, std::string>> expected;
  GoldenTensor* current = nullptr;  // tensor whose values are being read
  std::string current_name;
  HeaderLines header_lines;
  const GoldenTensor* last = nullptr;  // the tensor whose values ended last (a number after them is one too many)
  int64_t current_need = 0;

  auto truncated = [&](const std::string& where) {
    return at.error("tensor '" + current_name + "' " + dims_text(current->dims) + " expects " +
                    std::to_string(current_need) + " values, found " + std::to_string(current->values.size()) +
                    " before " + where);
  };

  for (std::string raw; std::getline(in, raw);) {
    ++at.line;
    // Every line ends with a line end: a last line without one was cut short, perhaps in the middle of a number.
    if (in.eof()) throw at.error("the last line has no line end (a file cut short?)");
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> words = split_ws(line);

    if (words[0] == "tensor") {
      if (current) throw truncated("the next tensor");
      if (!header_done) {
        finish_header(c, at, header_lines);
        expected = expected_dims(c);
        header_done = true;
      }
      if (words.size() < 3) throw at.error("expected 'tensor NAME RANK D0 D1 ...'");
      const std::string& name = words[1];
      const auto exp = expected.find(name);
      if (exp == expected.end()) {
        throw at.error("unknown tensor '" + name +
                       "' (known: q, k, v, a, b, A_log, dt_bias, g, beta, initial_state, o, final_state, states)");
      }
      if (c.tensors.count(name)) throw at.error("tensor '" + name + "' appears twice");
      const std::vector<int64_t>& want = exp->second.first;
      int64_t rank = 0;
      if (!parse_int(words[2], rank) || rank != int64_t(want.size())) {
        throw at.error("tensor '" + name + "' must have rank " + std::to_string(want.size()) + " " +
                       exp->second.second + ", got rank '" + words[2] + "'");
      }
      if (int64_t(words.size()) != 3 + rank) {
        throw at.error("tensor '" + name + "' of rank " + std::to_string(rank) + " needs " + std::to_string(rank) +
                       " dims, got " + std::to_string(words.size() - 3));
      }
      GoldenTensor t;
      for (int64_t i = 0; i < rank; ++i) {
        int64_t d = 0;
        if (!parse_int(words[3 + i], d)) throw at.error("tensor '" + name + "': dim '" + words[3 + i] + "' is not an integer");
        t.dims.push_back(d);
      }
      if (t.dims != want) {
        throw at.error("tensor '" + name + "' must have dims " + exp->second.second + " = " + dims_text(want) +
                       ", got " + dims_text(t.dims));
      }
      if (name == "initial_state" && !c.has_initial_state) {
        throw at.error("tensor 'initial_state' present but has_initial_state is 0");
      }
      current_name = name;
      // Golden cases are small: a tensor past 2^28 values is a malformed header (and would overflow the product).
      constexpr int64_t kMaxValues = int64_t(1) << 28;
      int64_t n = 1;
      for (int64_t d : t.dims) {
        if (d < 0 || (d > 0 && n > kMaxValues / d))
          throw at.error("tensor '" + name + "': dims " + dims_text(t.dims) + " hold more than 2^28 values");
        n *= d;
      }
      current_need = n;
      t.values.reserve(size_t(current_need));
      current = &(c.tensors[name] = std::move(t));
      continue;
    }

    if (current) {
      for (const std::string& w : words) {
        double v = 0;
        if (!parse_double(w, v)) {
          throw at.error("tensor '" + current_name + "': expected a finite number, got '" + w + "'");
        }
        if (int64_t(current->values.size()) == current_need) {
          throw at.error("tensor '" + current_name + "' " + dims_text(current->dims) + " has more than " +
                         std::to_string(current_need) + " values");
        }
        current->values.push_back(v);
      }
      if (int64_t(current->values.size()) == current_need) last = current, current = nullptr;
      continue;
    }
    if (double v = 0; last && parse_double(words[0], v))
      throw at.error("tensor '" + current_name + "' " + dims_text(last->dims) + " has more than " +
                     std::to_string(last->numel()) + " values");

    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) {
      throw at.error("expected '# comment', 'key: value' or 'tensor NAME RANK D0 D1 ...', got '" + line + "'");
    }
    const std::string key = trim(line.substr(0, colon));
    if (key.find_first_of(" \t") != std::string::npos) {
      throw at.error("expected 'key: value' with a key without spaces, got '" + line + "'");
    }
    if (header_done) throw at.error("header field '" + key + "' after the first tensor");
    if (c.meta.count(key)) throw at.error("header field '" + key + "' appears twice");
    c.meta[key] = trim(line.substr(colon + 1));
    header_lines[key] = at.line;
  }
  if (in.bad()) throw std::runtime_error("error while reading golden case '" + path + "'");

  if (current) throw truncated("the end of the file");
  if (!header_done) throw at.error("no tensors in the file (expected 'tensor NAME RANK D0 D1 ...' lines)");
  for (const char* name : {"q", "k", "v", "a", "b", "A_log", "dt_bias", "g", "beta", "o", "final_state"}) {
    if (!c.tensors.count(name)) throw at.error(std::string("missing tensor '") + name + "' at the end of the file");
  }
  if (c.has_initial_state && !c.tensors.count("initial_state")) {
    throw at.error("missing tensor 'initial_state' (has_initial_state is 1) at the end of the file");
  }
  return c;
}

TokenRaw golden_token(const GoldenCase& c, int n, int t) {
  TokenRaw r;
  r.q = c.tensor("q").slice({n, t});
  r.k = c.tensor("k").slice({n, t});
  r.v = c.tensor("v").slice({n, t});
  r.a = c.tensor("a").slice({n, t});
  r.b = c.tensor("b").slice({n, t});
  return r;
}

GateParams golden_gate_params(const GoldenCase& c) {
  GateParams p;
  p.A_log = c.tensor("A_log").values;
  p.dt_bias = c.tensor("dt_bias").values;
  p.scale = c.scale;
  p.l2norm_eps = c.l2norm_eps;
  return p;
}

TokenPrepared golden_prepared_token(const GoldenCase& c, int n, int t) {
  const TokenRaw raw = golden_token(c, n, t);
  const std::vector<double> g = c.tensor("g").slice({n, t});
  const std::vector<double> beta = c.tensor("beta").slice({n, t});
  if (c.qk_l2norm) return prepare_token_with_gates(c.shape, raw, golden_gate_params(c), g, beta);
  TokenPrepared p;
  p.q_hat = raw.q;
  for (double& x : p.q_hat) x *= c.scale;
  p.k_hat = raw.k;
  p.v = raw.v;
  p.g = g;
  p.beta = beta;
  return p;
}

std::vector<double> golden_initial_state(const GoldenCase& c, int n) {
  if (n < 0 || n >= c.N) throw std::out_of_range("golden_initial_state: sequence " + std::to_string(n));
  if (!c.has_initial_state) return std::vector<double>(size_t(c.shape.state_elems()), 0.0);
  return c.tensor("initial_state").slice({n});
}

std::vector<TensorCheck> check_golden_reference(const GoldenCase& c) {
  const GdnShape& s = c.shape;
  const size_t se = size_t(s.state_elems()), out_elems = size_t(s.heads_v) * s.head_dim_v;
  const bool with_states = c.has("states");
  std::vector<double> o(size_t(c.N) * c.T * out_elems), final_state(size_t(c.N) * se), states;
  if (with_states) states.resize(size_t(c.N) * c.T * se);
  for (int n = 0; n < c.N; ++n) {
    std::vector<double> state = golden_initial_state(c, n), ot;
    for (int t = 0; t < c.T; ++t) {
      recurrent_decode(s, golden_prepared_token(c, n, t), state, ot);
      std::copy(ot.begin(), ot.end(), o.begin() + (size_t(n) * c.T + t) * out_elems);
      if (with_states) std::copy(state.begin(), state.end(), states.begin() + (size_t(n) * c.T + t) * se);
    }
    std::copy(state.begin(), state.end(), final_state.begin() + size_t(n) * se);
  }
  std::vector<TensorCheck> checks;
  auto add = [&](const char* name, const std::vector<double>& got, int64_t heads) {
    checks.push_back({"reference", name, max_rel_err(c.tensor(name).values, got, heads), kGoldenReferenceTolerance});
  };
  add("o", o, int64_t(c.N) * c.T * s.heads_v);
  add("final_state", final_state, int64_t(c.N) * s.heads_v);
  if (with_states) add("states", states, int64_t(c.N) * c.T * s.heads_v);
  return checks;
}

}  // namespace kvb::ref
