// Config loading, --set overrides and axis resolution (harness/sweep/config.h).
#include <gtest/gtest.h>

#include "harness/sweep/config.h"
#include "harness/sweep/grid.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::FakeKind;
using test::TempDir;
using test::write_text;

const char* kGood = R"(
[experiment]
name = "decode_small"
description = "two batches"

[axes]
variant = ["recurrent", "kvbuffer"]
batch = [1, 8]
buffer_size = 4

[timing]
min_samples = 25
max_seconds_per_point = 1.5
target_noise_pct = 2
)";

/// Expects `fn` to throw UsageError whose message contains every one of `needles`.
template <typename Fn>
void expect_usage_error(Fn fn, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "message is not one line: " << what;
  }
}

TEST(Config, LoadsGoodFile) {
  TempDir dir;
  write_text(dir.file("good.toml"), kGood);
  const SweepConfig c = load_sweep_config(dir.file("good.toml"));
  EXPECT_EQ(c.name, "decode_small");
  EXPECT_EQ(c.kind, "decode");  // default
  EXPECT_EQ(c.description, "two batches");
  ASSERT_EQ(c.axes.size(), 3u);
  auto axis = [&](const std::string& name) {
    for (const auto& a : c.axes)
      if (a.first == name) return a.second;
    return std::vector<std::string>{};
  };
  EXPECT_EQ(axis("variant"), (std::vector<std::string>{"recurrent", "kvbuffer"}));
  EXPECT_EQ(axis("batch"), (std::vector<std::string>{"1", "8"}));
  EXPECT_EQ(axis("buffer_size"), (std::vector<std::string>{"4"}));  // a scalar is a one-value axis
  EXPECT_EQ(c.timing.min_samples.value(), 25);
  EXPECT_DOUBLE_EQ(c.timing.max_seconds_per_point.value(), 1.5);
  EXPECT_DOUBLE_EQ(c.timing.target_noise_pct.value(), 2.0);
}

TEST(Config, ExperimentOutIsADefaultCsvPath) {
  EXPECT_EQ(parse_sweep_config("[experiment]\nname = \"x\"\n", "a.toml").out, "");
  EXPECT_EQ(parse_sweep_config("[experiment]\nname = \"x\"\nout = \"results/y.csv\"\n", "a.toml").out,
            "results/y.csv");
  for (const std::string bad : {"\"results/y\"", "\".csv\"", "\"y.CSV\"", "3", "\"\"", "\"a/.csv\"", "\"results/\"",
                                "\"x.csv\\u0000.csv\"", "\"a\\nb.csv\""})
    expect_usage_error([&] { parse_sweep_config("[experiment]\nname = \"x\"\nout = " + bad + "\n", "a.toml"); },
                       {"a.toml", "experiment.out ="});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\"\nout = \"y\"\n", "a.toml"); },
                     {"a.toml:3: experiment.out = 'y' (allowed: a file path whose name ends in .csv, such as "
                      "results/x.csv, without control characters)"});
}

TEST(Config, ResolvesDefaultsInKindOrder) {
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const SweepConfig c = parse_sweep_config(kGood, "good.toml");
  const auto axes = resolve_axes(kind, c, {});
  ASSERT_EQ(axes.size(), kind.axes.size());
  for (size_t i = 0; i < axes.size(); ++i) EXPECT_EQ(axes[i].first, kind.axes[i].name);
  EXPECT_EQ(axes[1].second, (std::vector<std::string>{"1", "8"}));
  EXPECT_EQ(axes[3].second, kind.axes[3].defaults);  // heads_qk not in the file
  EXPECT_EQ(axes[6].second, kind.axes[6].defaults);  // seed
}

TEST(Config, OverridesReplaceAxisValues) {
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const SweepConfig c = parse_sweep_config(kGood, "good.toml");
  const AxisValues o = parse_axis_override("batch=2, 16 ,32");
  EXPECT_EQ(o, (AxisValues{"batch", {"2", "16", "32"}}));
  const auto axes = resolve_axes(kind, c, {o, parse_axis_override("seed=7")});
  EXPECT_EQ(axes[1].second, (std::vector<std::string>{"2", "16", "32"}));
  EXPECT_EQ(axes[6].second, (std::vector<std::string>{"7"}));
  // An axis overridden twice is a slip, not a choice: refused, naming it.
  expect_usage_error([&] { resolve_axes(kind, c, {o, parse_axis_override("batch=64")}); },
                     {"--set batch: set twice (allowed: once per axis, values separated by commas)"});
  // So is a value listed twice in one axis.
  expect_usage_error([&] { resolve_axes(kind, c, {parse_axis_override("batch=1,8,1")}); },
                     {"--set axis batch lists '1' twice", "allowed: each value once"});
  // Or twice in two spellings (one point either way).
  expect_usage_error([&] { resolve_axes(kind, c, {parse_axis_override("batch=64,8,064")}); },
                     {"--set axis batch lists 64 twice, as '64' and '064' (allowed: each value once)"});
}

TEST(Config, BadOverrideForms) {
  expect_usage_error([] { parse_axis_override("batch"); }, {"--set", "AXIS=V1,V2"});
  expect_usage_error([] { parse_axis_override("=4"); }, {"--set"});
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const SweepConfig c = parse_sweep_config(kGood, "good.toml");
  // Empty values survive parsing and are refused with the axis check's reason, naming --set and the axis.
  EXPECT_EQ(parse_axis_override("batch=1,,2"), (AxisValues{"batch", {"1", "", "2"}}));
  for (const char* set : {"batch=1,,2", "batch=", "batch= , 4"})
    expect_usage_error([&] { resolve_axes(kind, c, {parse_axis_override(set)}); },
                       {"--set batch: empty value", "batch"});
  expect_usage_error([&] { resolve_axes(kind, c, {parse_axis_override("bacth=4")}); },
                     {"--set", "unknown axis 'bacth'", "batch", "buffer_size", "seed"});
  expect_usage_error([&] { resolve_axes(kind, c, {parse_axis_override("batch=0")}); }, {"batch", ">= 1"});
}

TEST(Config, UnknownAxisNamesItAndTheKnownOnes) {
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const SweepConfig c =
      parse_sweep_config("[experiment]\nname = \"x\"\n[axes]\nbatch = [1]\nlayer = [36]\n", "x.toml");
  expect_usage_error([&] { resolve_axes(kind, c, {}); },
                     {"x.toml", "unknown axis 'layer'", "variant, batch, buffer_size, heads_qk"});
}

TEST(Config, MalformedTomlNamesTheFile) {
  TempDir dir;
  write_text(dir.file("bad.toml"), "[experiment]\nname = \"x\nbatch = [1,\n");
  expect_usage_error([&] { load_sweep_config(dir.file("bad.toml")); }, {dir.file("bad.toml"), "malformed TOML"});
  // An integer past 64 bits is a parse error in TOML: the message says which integers a TOML file may hold.
  expect_usage_error(
      [&] { parse_sweep_config("[experiment]\nname = \"x\"\n[axes]\nbatch = [-99999999999999999999]\n", "big.toml"); },
      {"big.toml:4:", "malformed TOML", "(allowed: TOML integers -9223372036854775808 to 9223372036854775807)"});
}

TEST(Config, ANulByteInAValueIsKeptInTheMessageEscaped) {
  // what() is a C string: a NUL kept as it is would end the message there.
  const UsageError e(std::string("value 'a\0" "1b' (allowed: c)", 25));
  EXPECT_EQ(std::string(e.what()), "value 'a\\x001b' (allowed: c)");
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\\u0000y\"\n", "c.toml"); },
                     {"c.toml: experiment.name = 'x\\x00y' (allowed: letters, digits, '_', '-', '.')"});
}

TEST(Config, MissingFile) {
  TempDir dir;
  expect_usage_error([&] { load_sweep_config(dir.file("absent.toml")); }, {"--config", dir.file("absent.toml")});
}

TEST(Config, StructuralErrors) {
  expect_usage_error([] { parse_sweep_config("[axes]\nbatch = [1]\n", "c.toml"); }, {"c.toml", "[experiment]"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nkind = \"decode\"\n", "c.toml"); },
                     {"experiment.name"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = 3\n", "c.toml"); }, {"experiment.name", "string"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"a b\"\n", "c.toml"); }, {"experiment.name"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\"\nnmae = \"y\"\n", "c.toml"); },
                     {"experiment.nmae", "name, kind, description"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\"\n[axis]\nbatch = [1]\n", "c.toml"); },
                     {"'axis'", "experiment, axes, timing"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\"\n[axes]\nbatch = []\n", "c.toml"); },
                     {"axes.batch", "empty"});
  expect_usage_error(
      [] { parse_sweep_config("[experiment]\nname = \"x\"\n[axes]\nbatch = [[1, 2]]\n", "c.toml"); },
      {"axes.batch", "integers or strings"});
  // Timing and experiment fields: the line, the value given and what is allowed.
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\"\n[timing]\nmin_samples = 0\n", "c.toml"); },
                     {"c.toml:4: timing.min_samples = 0 (allowed: an integer from 1 to 1000000)"});
  expect_usage_error(
      [] { parse_sweep_config("[experiment]\nname = \"x\"\n[timing]\nmax_seconds_per_point = -1\n", "c.toml"); },
      {"c.toml:4: timing.max_seconds_per_point = -1 (allowed: a finite number > 0)"});
  expect_usage_error(
      [] { parse_sweep_config("[experiment]\nname = \"x\"\n[timing]\ntarget_noise_pct = \"1\"\n", "c.toml"); },
      {"c.toml:4: timing.target_noise_pct = '1' (allowed: a finite number > 0)"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = [1]\n", "c.toml"); },
                     {"c.toml:2: experiment.name = an array (allowed: a string)"});
  // A name too long for the default output's file name is the name's fault, not --out's.
  expect_usage_error(
      [] { parse_sweep_config("[experiment]\nname = \"" + std::string(201, 'n') + "\"\n", "c.toml"); },
      {"c.toml: experiment.name = '", "' has 201 characters (allowed: at most 200)"});
  EXPECT_EQ(parse_sweep_config("[experiment]\nname = \"" + std::string(200, 'n') + "\"\n", "c.toml").name.size(),
            200u);
}

struct BadValue {
  const char* axis;
  const char* value;
  const char* reason;
};

class ConfigBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(ConfigBadValue, IsRejectedNamingTheAxis) {
  const BadValue& bad = GetParam();
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const std::string text = std::string("[experiment]\nname = \"x\"\n[axes]\n") + bad.axis + " = [" + bad.value + "]\n";
  const SweepConfig c = parse_sweep_config(text, "x.toml");
  expect_usage_error([&] { resolve_axes(kind, c, {}); }, {bad.axis, bad.reason});
}

INSTANTIATE_TEST_SUITE_P(Axes, ConfigBadValue,
                         ::testing::Values(BadValue{"batch", "0", ">= 1"}, BadValue{"batch", "-1", ">= 1"},
                                           BadValue{"batch", "\"two\"", ">= 1"},
                                           BadValue{"buffer_size", "0", ">= 1"},
                                           BadValue{"head_dim_k", "48", "32, 64, 128, 256"},
                                           BadValue{"variant", "\"chunked\"", "recurrent, kvbuffer"}));

TEST(Config, HeadsVNotAMultipleOfHeadsQkFailsValidation) {
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const SweepConfig c = parse_sweep_config(
      "[experiment]\nname = \"x\"\n[axes]\nvariant = \"kvbuffer\"\nheads_qk = [16]\nheads_v = [32, 24]\n", "x.toml");
  const auto points = make_grid(kind, resolve_axes(kind, c, {}));
  ASSERT_EQ(points.size(), 2u);
  expect_usage_error([&] { validate_points(kind, points); }, {"heads_v=24", "multiple of heads_qk"});
  EXPECT_NO_THROW(validate_points(kind, {points[0]}));
}

TEST(ConfigCanonical, OneSpellingPerAxisValue) {
  EXPECT_EQ(canonical_axis_value("064"), "64");
  EXPECT_EQ(canonical_axis_value("+64"), "64");
  EXPECT_EQ(canonical_axis_value("64"), "64");
  EXPECT_EQ(canonical_axis_value(".7"), "0.7");
  EXPECT_EQ(canonical_axis_value("0.70"), "0.7");
  EXPECT_EQ(canonical_axis_value("recurrent"), "recurrent");
  EXPECT_EQ(canonical_axis_value("all"), "all");
  EXPECT_EQ(canonical_axis_value(""), "");
  // The edges, which the figures' result_csv.canonical_axis_value spells the same (tests/plots, test_axis_values_...
  // one_spelling): only plain ASCII decimal numbers a double holds have another spelling.
  const std::pair<std::string, std::string> edges[] = {
      {"7e-1", "0.7"}, {"5.", "5"}, {"-0.0", "-0"}, {"1e15", "1000000000000000"}, {"99999999999999999999", "1e+20"},
      {"1e-310", "1e-310"}, {"1e-400", "1e-400"}, {"0e-400", "0"}, {"1e400", "1e400"}, {"0x1p-1", "0x1p-1"},
      {std::string("0.5\0x", 5), std::string("0.5\0x", 5)}, {" 64", " 64"}, {"64 ", "64 "}, {"1e", "1e"}};
  for (const auto& [value, canonical] : edges) EXPECT_EQ(canonical_axis_value(value), canonical) << value;
}

TEST(Config, AxisValueErrorsNameTheLine) {
  expect_usage_error(
      [] { parse_sweep_config("[experiment]\nname = \"x\"\n[axes]\nstate_dtype = [[\"fp32\"]]\n", "x.toml"); },
      {"x.toml:4:", "axes.state_dtype", "integers or strings"});
  expect_usage_error([] { parse_sweep_config("[experiment]\nname = \"x\"\n[axes]\nbatch = []\n", "x.toml"); },
                     {"x.toml:4:", "axes.batch is empty"});
}

}  // namespace
}  // namespace kvb
