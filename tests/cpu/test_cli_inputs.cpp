// The kvb binary on bad or odd input: errors that name the flag, field, file and line and what is allowed, exit 2,
// and no file changed that the command was not asked to change (every command alike).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cli_runner.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/csv.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

namespace fs = std::filesystem;
using test::count_lines;
using test::read_text;
using test::Result;
using test::run_kvb;
using test::shell_quote;
using test::TempDir;
using test::write_text;

const std::string kSource = KVB_SOURCE_DIR;
const std::string kCases = std::string(KVB_TEST_DATA_DIR) + "/csv/cases/";

/// Expects exit 2 with one line on stderr holding every one of `needles`, and nothing on stdout.
void expect_refused(const Result& r, const std::vector<std::string>& needles, const std::string& what) {
  EXPECT_EQ(r.code, 2) << what << ": " << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << what << ": " << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << what << ": " << r.err;
  EXPECT_TRUE(r.out.empty()) << what << ": " << r.out;
}

TEST(CliInputs, AnUnknownOptionIsNamedBeforeAMissingRequiredOne) {
  TempDir dir;
  expect_refused(run_kvb(dir, "sweep --bogus-flag"), {"kvb sweep: unknown option '--bogus-flag'", "--config"},
                 "sweep");
  expect_refused(run_kvb(dir, "merge --bogus"), {"kvb merge: unknown option '--bogus'", "--force"}, "merge");
  expect_refused(run_kvb(dir, "capacity --budget=3"), {"unknown option '--budget'", "--budget-gib"}, "capacity");
  // A negative number is a value, not an option.
  expect_refused(run_kvb(dir, "compare a.csv b.csv --threshold -5"), {"--threshold: -5 is out of range"}, "compare");
}

TEST(CliInputs, ABadAxisValueNamesWhereItWasGiven) {
  TempDir dir;
  const std::string config = kSource + "/experiments/spec_verify.toml";
  expect_refused(run_kvb(dir, "sweep --config " + shell_quote(config) + " --dry-run --set verify_kernel=bogus"),
                 {"--set verify_kernel = 'bogus' is not known (allowed: automatic, cuda_cores, tensor_cores, staged)"},
                 "--set");
  const std::string bad = dir.file("bad.toml");
  test::write_text(bad, "[experiment]\nname = \"x\"\nkind = \"spec_verify\"\n[axes]\nbatch = [0]\n");
  expect_refused(run_kvb(dir, "sweep --config " + shell_quote(bad) + " --dry-run"),
                 {bad + ":5: [axes] batch = '0' is out of range (allowed: integers 1 to 4096)"}, "config");
}

TEST(CliInputs, AValueHoldingALineBreakStaysOneLineAndSetTakesOneValue) {
  TempDir dir;
  const std::string config = kSource + "/experiments/spec_verify.toml";
  expect_refused(run_kvb(dir, "sweep --config " + shell_quote(config) + " --dry-run --set \"$(printf 'verify_kernel=staged\\nfoo')\""),
                 {"--set verify_kernel = 'staged\\nfoo' is not known"}, "line break");
  // So do the other characters a terminal or an editor may break a line at or act on: VT, FF, NEL, U+2028, U+2029,
  // FS, ESC, DEL.
  const std::string breaks =
      "a\\vb\\fc\\302\\205d\\342\\200\\250e\\342\\200\\251f\\034g\\033h\\177i";  // printf's octal
  expect_refused(run_kvb(dir, "sweep --config " + shell_quote(config) + " --dry-run --set \"$(printf 'verify_kernel=" +
                                  breaks + "')\""),
                 {"--set verify_kernel = 'a\\x0bb\\x0cc\\u0085d\\u2028e\\u2029f\\x1cg\\x1bh\\x7fi' is not known"},
                 "other line breaks");
  // A file name after --set is not taken as a second override: merge reports its missing input, not OUT.
  const std::string out = dir.file("out.csv");
  expect_refused(run_kvb(dir, "merge --config " + shell_quote(config) + " --set batch=64 " +
                                  shell_quote(out) + " " + shell_quote(dir.file("missing.csv"))),
                 {"missing.csv"}, "--set then files");
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliInputs, AnAxisSetTwiceIsNamed) {
  TempDir dir;
  const std::string out = dir.file("out.csv");
  const std::string config = " --config " + shell_quote(kSource + "/experiments/decode_latency.toml");
  const std::string allowed = "allowed: once per axis, values separated by commas)";
  // A second override given to one --set (it takes one), with and without --dry-run: the project's line, not CLI11's.
  for (const char* dry : {" --dry-run", ""})
    expect_refused(run_kvb(dir, "sweep" + config + dry + " --set batch=64 batch=128 --out " + shell_quote(out)),
                   {"kvb: --set batch: set twice ('batch=64', then 'batch=128'; " + allowed},
                   std::string("one --set") + dry);
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --set=batch=64 --set buffer_size=8 buffer_size=4"),
                 {"--set buffer_size: set twice ('buffer_size=8', then 'buffer_size=4'; " + allowed}, "--set=");
  // A second --set for the axis.
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --set batch=64 --set batch=128 --out " +
                                  shell_quote(out)),
                 {"kvb: --set batch: set twice (" + allowed}, "two --set");
  EXPECT_FALSE(fs::exists(out));
  expect_refused(run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(kSource + "/results/decode_latency.csv") +
                                  config + " --set batch=64 --set batch=128"),
                 {"kvb: --set batch: set twice (" + allowed}, "merge");
  EXPECT_FALSE(fs::exists(out));
  // Another axis after one --set's value, or a word: each override needs its own --set.
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --set batch=64 buffer_size=8"),
                 {"kvb: --set: 'buffer_size=8' follows --set batch=64 (allowed: one AXIS=V1,V2,... after each --set)"},
                 "another axis");
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --set batch=64 foo"),
                 {"kvb: --set: 'foo' follows --set batch=64"}, "a word");
}

TEST(CliInputs, ANulByteInAValueIsShownEscapedAndTheMessageGoesOn) {
  TempDir dir;
  const std::string out = dir.file("out.csv");
  // A config string (TOML's \u0000 escape): the whole value and the allowed ones, nothing written.
  const std::string config = dir.file("nul.toml");
  write_text(config, "[experiment]\nname = \"x\"\nkind = \"spec_verify\"\n[axes]\n"
                     "verify_kernel = [\"sta\\u0000ged tail\"]\n");
  expect_refused(run_kvb(dir, "sweep --dry-run --config " + shell_quote(config) + " --out " + shell_quote(out)),
                 {config + ":5: [axes] verify_kernel = 'sta\\x00ged tail' is not known (allowed: automatic, "
                           "cuda_cores, tensor_cores, staged)"},
                 "config string");
  EXPECT_FALSE(fs::exists(out));

  // A CSV cell, in merge and compare: \x00 and not \0, so that the digits after it do not read as an octal escape.
  const std::string text = read_text(kSource + "/results/decode_latency.csv");
  const size_t second = text.find('\n', text.find('\n') + 1) + 1;
  std::string csv = text.substr(0, second);
  const size_t cell = csv.find(",fp32,bf16,");
  ASSERT_NE(cell, std::string::npos);
  csv.replace(cell, 11, std::string(",fp\0" "32 tail,bf16,", 17));
  const std::string nul_csv = dir.file("nul.csv");
  write_text(nul_csv, csv);
  const std::string needle = nul_csv + ":2: state_dtype = 'fp\\x0032 tail' (allowed: fp32, bf16, or empty for fp32)";
  expect_refused(run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(nul_csv)), {needle}, "merge");
  EXPECT_FALSE(fs::exists(out));
  expect_refused(run_kvb(dir, "compare " + shell_quote(kSource + "/results/decode_latency.csv") + " " +
                                  shell_quote(nul_csv)),
                 {needle}, "compare");

  // A gdn-case file: the line and column of the NUL, the line whole; exit 2, the other files still checked.
  std::string gdn = read_text(std::string(KVB_TEST_DATA_DIR) + "/golden/t1_no_state.gdn");
  const size_t format = gdn.find("format: gdn-case v1\n");
  ASSERT_NE(format, std::string::npos);
  gdn.insert(format + 13, 1, '\0');
  const std::string nul_gdn = dir.file("nul.gdn");
  write_text(nul_gdn, gdn);
  const Result r = run_kvb(dir, "check-golden " + shell_quote(nul_gdn) + " " +
                                    shell_quote(std::string(KVB_TEST_DATA_DIR) + "/golden/t1_no_state.gdn"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("kvb check-golden: " + nul_gdn + ":2: a NUL byte at column 14 of 'format: gdn-c\\x00ase "
                       "v1' (allowed: plain text"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find(nul_gdn), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("t1_no_state.gdn  reference"), std::string::npos) << r.out;
  // A path's bytes that are no UTF-8 are written \xNN, as the figures' scripts write them.
  const Result latin1 = run_kvb(dir, "compare \"$(printf 'caf\\351.csv')\" b.csv");
  EXPECT_EQ(latin1.err, "kvb: BASELINE caf\\xe9.csv: no such file (allowed: a result CSV of kvb sweep)\n");
  // The column counts characters: a NUL after "name: " and three two-byte letters is at column 10.
  const std::string wide_gdn = dir.file("wide.gdn");
  write_text(wide_gdn, std::string("# case\nname: \u00e9\u00e9\u00e9") + '\0' + "\n");
  const Result wide = run_kvb(dir, "check-golden " + shell_quote(wide_gdn));
  EXPECT_NE(wide.err.find(wide_gdn + ":2: a NUL byte at column 10 of "), std::string::npos) << wide.err;
}

TEST(CliInputs, ANumberAfterWhiteSpaceOrInHexIsRefused) {
  TempDir dir;
  // strtoll and strtod skip leading white space and read hex: "64" and "\n64" would be two points of one batch.
  const std::string grid = " --config " + shell_quote(kSource + "/experiments/decode_latency.toml") +
                           " --dry-run --set variant=recurrent --set launch=plain";
  expect_refused(run_kvb(dir, "sweep" + grid + " --set \"$(printf 'batch=64,\n64')\""),
                 {"batch = '\\n64' has white space around it (allowed: integers 1 to 4096)"},
                 "line break before a number");
  expect_refused(run_kvb(dir, "sweep" + grid + " --set \"$(printf 'batch=64,\f64')\""),
                 {"has white space around it"}, "form feed before a number");
  const std::string verify = " --config " + shell_quote(kSource + "/experiments/spec_verify.toml") + " --dry-run";
  expect_refused(run_kvb(dir, "sweep" + verify + " --set accepted=0x.8"), {"accepted = '0x.8' is not allowed"}, "hex");
}

TEST(CliInputs, AConfigValueWithWhiteSpaceAroundItIsRefusedNotTrimmed) {
  TempDir dir;
  const std::string out = dir.file("out.csv");
  for (const auto& [kind, axis, value, allowed] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"spec_verify", "verify_kernel", "staged ", "automatic, cuda_cores, tensor_cores, staged"},
           {"decode", "launch", " plain", "plain, pdl"},
           {"spec_verify", "accepted", "0.7\\t", "all, none, or an acceptance rate strictly between 0 and 1"},
           {"decode", "batch", " 64", "integers 1 to 4096"}}) {
    const std::string config = dir.file(axis + ".toml");
    write_text(config, "[experiment]\nname = \"x\"\nkind = \"" + kind + "\"\n[axes]\n" + axis + " = [\"" + value +
                           "\"]\n");
    const std::string shown = value == "0.7\\t" ? "0.7\t" : value;  // TOML's escape, the tab it stands for
    expect_refused(run_kvb(dir, "sweep --dry-run --config " + shell_quote(config) + " --out " + shell_quote(out)),
                   {config + ":5: [axes] " + axis + " = '" + shown + "' has white space around it (allowed: " +
                    allowed + ")"},
                   axis);
    EXPECT_FALSE(fs::exists(out)) << axis;
  }
  // A value that is wrong without its white space too is called so.
  const std::string config = dir.file("foo.toml");
  write_text(config, "[experiment]\nname = \"x\"\n[axes]\nlaunch = [\" foo\"]\n");
  expect_refused(run_kvb(dir, "sweep --dry-run --config " + shell_quote(config)),
                 {config + ":4: [axes] launch = ' foo' is not known (allowed: plain, pdl)"}, "foo");
  // A CSV cell with white space around it is refused by merge alike.
  CsvTable t = parse_csv(read_text(kSource + "/results/decode_latency.csv"), "decode_latency.csv");
  t.rows.resize(1);
  t.rows[0][size_t(std::find(t.header.begin(), t.header.end(), "launch") - t.header.begin())] = "plain ";
  write_text(dir.file("cell.csv"), format_csv(t));
  expect_refused(run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(dir.file("cell.csv"))),
                 {dir.file("cell.csv") + ":2: launch = 'plain ' has white space around it (allowed: plain, pdl)"},
                 "merge");
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliInputs, AnOverLongValueIsQuotedInPart) {
  TempDir dir;
  // A value of 100,000 characters (a pasted file, a runaway script) gives a short line naming its length.
  const std::string grid = " --config " + shell_quote(kSource + "/experiments/spec_verify.toml") + " --dry-run";
  const std::string digits = std::string(99999, '9') + "x";
  for (const std::string& set : {"batch=" + digits, "verify_kernel=" + digits}) {
    const Result r = run_kvb(dir, "sweep" + grid + " --set " + set);
    expect_refused(r, {"'" + std::string(72, '9') + "... (100000 characters)'"}, set.substr(0, 12));
    EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
  }
  // Digits after a colon are shortened too: only a line number's few digits stay whole after a path.
  expect_refused(run_kvb(dir, "sweep" + grid + " --set batch=a:" + std::string(100000, '9')),
                 {"'a:" + std::string(70, '9') + "... (100002 characters)'"}, "colon and digits");
  const Result r = run_kvb(dir, "sweep" + grid + " --min-samples " + digits);
  expect_refused(r, {"--min-samples: '" + std::string(72, '9') + "... (100000 characters)'"}, "--min-samples");
}

TEST(CliInputs, EveryLongWordOfAnErrorIsShortenedWholeCharactersAndQuotesKept) {
  TempDir dir;
  const std::string config = shell_quote(kSource + "/experiments/spec_verify.toml");
  const std::string grid = " --config " + config + " --dry-run";
  const std::string x2000(2000, 'x');
  // Axis names, rates, paths, options: each quoted in part, its quote or colon kept.
  expect_refused(run_kvb(dir, "sweep" + grid + " --set " + x2000 + "=1"),
                 {"unknown axis '" + std::string(72, 'x') + "... (2000 characters)' for"}, "axis name");
  expect_refused(run_kvb(dir, "sweep" + grid + " --set accepted=" + x2000),
                 {"accepted = '" + std::string(72, 'x') + "... (2000 characters)' is not allowed"}, "rate");
  expect_refused(run_kvb(dir, "sweep --config /tmp/" + x2000 + ".toml"), {"... (2010 characters): cannot be reached: File name too long"},
                 "path");
  expect_refused(run_kvb(dir, "sweep" + grid + " --" + x2000), {"... (2002 characters)' (allowed: --help"},
                 "option");
  // A long config path is shortened, the line of its error kept whole after it.
  const std::string deep = dir.file(std::string(90, 'd'));
  fs::create_directories(deep);
  write_text(deep + "/c.toml", "[experiment]\nname = \"x\"\n[axes]\nbatch = [0]\n");
  const std::string shown_deep = (deep + "/c.toml").substr(0, 72);
  expect_refused(run_kvb(dir, "sweep --dry-run --config " + shell_quote(deep + "/c.toml")),
                 {shown_deep + "... (" + std::to_string(deep.size() + 7) + " characters):4: [axes] batch = '0' is out"},
                 "long config path");
  // Characters are UTF-8 code points: 51 two-byte ones are quoted whole, 100 three-byte ones cut between two.
  std::string e51 = "a", euro100;
  for (int i = 0; i < 50; ++i) e51 += "\u00e9";
  for (int i = 0; i < 100; ++i) euro100 += "\u20ac";
  expect_refused(run_kvb(dir, "sweep" + grid + " --set variant=" + e51), {"variant = '" + e51 + "' is not known"},
                 "51 characters");
  std::string euro72;
  for (int i = 0; i < 72; ++i) euro72 += "\u20ac";
  expect_refused(run_kvb(dir, "sweep" + grid + " --set variant=" + euro100),
                 {"variant = '" + euro72 + "... (100 characters)' is not known"}, "100 characters");
  // A line break in a value CLI11 refuses stays one line.
  expect_refused(run_kvb(dir, "sweep" + grid + " --min-samples \"$(printf '1\\n2')\""), {"'1\\n2' is not an integer"},
                 "CLI11's own error");
  // A value holding line breaks is counted and cut by its own characters: an escape is one, never cut.
  std::string breaks46, shown72;  // "\na" 46 times: 92 characters, its first 72 "\na" 36 times
  for (int i = 0; i < 46; ++i) breaks46 += "\\na";
  for (int i = 0; i < 36; ++i) shown72 += "\\na";
  expect_refused(run_kvb(dir, "sweep" + grid + " --set \"$(printf 'variant=" + breaks46 + "')\""),
                 {"variant = '" + shown72 + "... (92 characters)' is not known"}, "line breaks");
  // Bytes that are no UTF-8 (1000 stray continuation bytes) count one character each, each written \xNN.
  std::string stray;
  for (int i = 0; i < 1000; ++i) stray += "\\200";
  const Result r = run_kvb(dir, "sweep" + grid + " --set \"$(printf 'variant=" + stray + "')\"");
  std::string stray72;  // each written \x80, 72 of them
  for (int i = 0; i < 72; ++i) stray72 += "\\x80";
  expect_refused(r, {"variant = '" + stray72 + "... (1000 characters)' is not known"}, "stray continuation bytes");
}

TEST(CliInputs, ASweepResumesOnlyItsOwnExperimentsCsv) {
  TempDir dir;
  // ci_smoke (kind decode) given the committed decode_latency.csv as --out: it would add its rows to another
  // experiment's file, which kvb merge then refuses.
  const std::string out = dir.file("decode.csv");
  fs::copy_file(kSource + "/results/decode_latency.csv", out);
  const std::string before = read_text(out);
  const Result r = run_kvb(dir, "sweep --config " + shell_quote(kSource + "/experiments/ci_smoke.toml") +
                                    " --dry-run --out " + shell_quote(out));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "kvb: --out " + out + ":2: experiment 'decode_latency' is not this sweep's (allowed: a CSV of "
                   "experiment 'ci_smoke' to resume, or a new --out)\n");
  EXPECT_EQ(read_text(out), before);
}

TEST(CliInputs, ASweepWhosePointsAreAllDoneHasNothingToDoOnAnyMachine) {
  TempDir dir;
  // The rerun of a finished sweep: every point of the grid has an ok row in --out, so nothing runs, no GPU is looked
  // for, and the file is left as it was.
  const std::string out = dir.file("buffer_form.csv");
  fs::copy_file(kSource + "/results/buffer_form.csv", out);
  const std::string before = read_text(out);
  const Result r = run_kvb(dir, "sweep --config " + shell_quote(kSource + "/experiments/buffer_form.toml") +
                                    " --out " + shell_quote(out));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "kvb sweep: all 20 points of this run are already in " + out + "; nothing to do\n");
  EXPECT_EQ(read_text(out), before);
  const Result one = run_kvb(dir, "sweep --config " + shell_quote(kSource + "/experiments/buffer_form.toml") +
                                      " --set batch=64 --set buffer_size=2 --set buffer_form=raw --out " +
                                      shell_quote(out));
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find("the 1 point of this run is already in " + out + "; nothing to do\n"), std::string::npos)
      << one.err;
  EXPECT_EQ(read_text(out), before);
}

TEST(CliInputs, ACapacityCsvIsCalledSoByTheSweepCsvReaders) {
  TempDir dir;
  const std::string cap = shell_quote(kSource + "/results/capacity.csv");
  const std::string said = kSource +
                           "/results/capacity.csv:1: a CSV of kvb capacity, which this command does not read "
                           "(allowed: a result CSV of kind decode, spec_verify, short_context, accuracy)";
  const Result compare = run_kvb(dir, "compare " + cap + " " + cap);
  EXPECT_EQ(compare.code, 2);
  EXPECT_EQ(compare.err, "kvb: " + said + "\n");
  const Result merge = run_kvb(dir, "merge " + shell_quote(dir.file("out.csv")) + " " + cap);
  EXPECT_EQ(merge.code, 2);
  EXPECT_EQ(merge.err, "kvb: " + said + "\n");
  EXPECT_FALSE(fs::exists(dir.file("out.csv")));
}

TEST(CliInputs, AFailedWriteToStandardOutputIsAFailure) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  TempDir dir;
  const std::string kvb = std::string("'") + KVB_BINARY_PATH + "'";
  const std::string csv = shell_quote(kSource + "/results/decode_latency.csv");
  for (const std::string& args :
       {std::string("info"), std::string("--help"), "compare " + csv + " " + csv,
        "sweep --config " + shell_quote(kSource + "/experiments/decode_latency.toml") + " --dry-run --out " +
            shell_quote(dir.file("x.csv")),
        "capacity --budget-gib 10 --out " + shell_quote(dir.file("cap.csv")),
        "check-golden " + shell_quote(kSource + "/tests/data/golden/draft4.gdn")}) {
    const std::string err = dir.file("err.txt");
    const int status = std::system(("cd " + shell_quote(kSource) + " && " + kvb + " " + args + " >/dev/full 2>" +
                                    shell_quote(err)).c_str());
    ASSERT_TRUE(WIFEXITED(status)) << args;
    EXPECT_EQ(WEXITSTATUS(status), 1) << args;
    EXPECT_NE(read_text(err).find("kvb: standard output: "), std::string::npos) << args << ": " << read_text(err);
    // The reason, also where the command flushed stdout itself (check-golden, before each error line and file).
    EXPECT_NE(read_text(err).find(std::strerror(ENOSPC)), std::string::npos) << args << ": " << read_text(err);
  }
  // kvb capacity's CSV is written before its table is printed: what it measured is kept.
  EXPECT_TRUE(fs::exists(dir.file("cap.csv")));
}

TEST(CliInputs, TheParsersOwnErrorsNameTheOptionAndWhatIsAllowed) {
  TempDir dir;
  const auto line = [&](const std::string& args) {
    const Result r = run_kvb(dir, args);
    EXPECT_EQ(r.code, 2) << args;
    return r.err;
  };
  EXPECT_EQ(line("info --device 0 --device 1"), "kvb info: --device: given 2 times (allowed: once)\n");
  EXPECT_EQ(line("info --device="), "kvb info: --device: no value (allowed: INT in [0, 1023])\n");
  EXPECT_EQ(line("sweep --config x.toml --set"),
            "kvb sweep: --set: no value (allowed: a value; see kvb sweep --help)\n");
  EXPECT_EQ(line("sweep --config x.toml --dry-run=maybe"),
            "kvb sweep: --dry-run takes no value, given 'maybe' (allowed: --dry-run alone)\n");
  EXPECT_EQ(line("info extra"),
            "kvb info: unexpected argument 'extra' (allowed: --help, --device, --buffer-mib, --gpu-present)\n");
  // In the order given, each word whole.
  EXPECT_EQ(line("info x 'a b'"),
            "kvb info: unexpected arguments 'x', 'a b' (allowed: --help, --device, --buffer-mib, --gpu-present)\n");
  EXPECT_EQ(line(""), "kvb: a subcommand is required (allowed: info, check-golden, sweep, merge, compare, capacity, "
                      "reproduce)\n");
  EXPECT_EQ(line("merge"), "kvb merge: OUT is required (see kvb merge --help)\n");
  EXPECT_EQ(line("compare a.csv"), "kvb compare: CANDIDATE is required (see kvb compare --help)\n");
  EXPECT_NE(line("compare a.csv b.csv c.csv").find("kvb compare: unexpected argument 'c.csv' (allowed: --help, "),
            std::string::npos);
}

TEST(CliInputs, AWordForANumberIsCalledSo) {
  TempDir dir;
  const std::string config = " --config " + shell_quote(kSource + "/experiments/decode_latency.toml");
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --min-samples abc"),
                 {"--min-samples: 'abc' is not an integer (allowed: integers 1 to 1000000)"}, "--min-samples");
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --max-seconds soon"),
                 {"--max-seconds: 'soon' is not a finite number (allowed: a number of seconds > 0"}, "--max-seconds");
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --max-seconds nan"), {"--max-seconds: 'nan'"}, "nan");
  expect_refused(run_kvb(dir, "info --device first"), {"--device: 'first' is not an integer (allowed: integers 0"},
                 "--device");
  expect_refused(run_kvb(dir, "compare a.csv b.csv --threshold five"),
                 {"--threshold: 'five' is not a finite number (allowed: a number of percent >= 0 and <= 1000)"},
                 "--threshold");
  expect_refused(run_kvb(dir, "reproduce --device 1.5"), {"--device: '1.5' is not an integer"}, "reproduce");
  // A sweep CSV whose kind holds no latency is refused as such by kvb compare.
  const std::string accuracy = shell_quote(kSource + "/results/accuracy.csv");
  expect_refused(run_kvb(dir, "compare " + accuracy + " " + accuracy),
                 {"accuracy.csv: a CSV of kind accuracy holds no latency to compare (allowed: a CSV of kind decode, "
                  "spec_verify, short_context)"},
                 "compare accuracy");
  // An integer long long cannot hold is out of range, not "not an integer".
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --min-samples 99999999999999999999"),
                 {"--min-samples: 99999999999999999999 is out of range (allowed: integers 1 to 1000000)"},
                 "--min-samples out of range");
  expect_refused(run_kvb(dir, "sweep" + config + " --dry-run --set seed=-99999999999999999999"),
                 {"seed = '-99999999999999999999' is out of range (allowed: integers"}, "seed out of range");
}

TEST(CliInputs, AConfigThatIsAFolderIsCalledSo) {
  TempDir dir;
  expect_refused(run_kvb(dir, "sweep --dry-run --config experiments"),
                 {"--config experiments: is a directory (allowed: a sweep config"}, "sweep");
  expect_refused(run_kvb(dir, "capacity --budget-gib 80 --config experiments"),
                 {"--config experiments: is a directory (allowed: a capacity config"}, "capacity");
  expect_refused(run_kvb(dir, "merge " + shell_quote(dir.file("m.csv")) + " results/decode_latency.csv --config "
                                  "experiments"),
                 {"--config experiments: is a directory"}, "merge");
  EXPECT_FALSE(fs::exists(dir.file("m.csv")));
}

// A path the system cannot follow (here a loop of links; a folder this user cannot search alike) is called so, with
// the system's reason, not "no such file".
TEST(CliInputs, AnInputPathThatCannotBeFollowedIsCalledSo) {
  TempDir dir;
  fs::create_symlink("loop", dir.file("loop"));
  const std::string loop = shell_quote(dir.file("loop") + "/x.toml");
  const std::string reason = std::strerror(ELOOP);
  expect_refused(run_kvb(dir, "sweep --dry-run --config " + loop),
                 {"x.toml: cannot be reached: " + reason, "(allowed: a sweep config", "this user can search)"}, "sweep");
  expect_refused(run_kvb(dir, "compare " + shell_quote(dir.file("loop")) + " results/decode_latency.csv"),
                 {"BASELINE " + dir.file("loop") + ": cannot be reached: " + reason}, "compare");
}

TEST(CliInputs, MergeChecksTheConfigsPointsAsSweepDoes) {
  TempDir dir;
  // buffer_form = raw with launch = pdl is no point a sweep runs: merge --config refuses the grid as sweep does.
  const std::string grid = " --config " + shell_quote(kSource + "/experiments/decode_latency.toml") +
                           " --set buffer_form=raw --set launch=pdl";
  const std::string why = "launch = pdl is not supported with buffer_form = raw (allowed with raw: plain)";
  // The error names the config and the overrides the point came from.
  const std::string source = "decode_latency.toml --set buffer_form=raw --set launch=pdl: point variant=kvbuffer";
  expect_refused(run_kvb(dir, "sweep --dry-run" + grid), {source, why}, "sweep");
  expect_refused(run_kvb(dir, "merge " + shell_quote(dir.file("m.csv")) + " " +
                                  shell_quote(kSource + "/results/decode_latency.csv") + grid),
                 {source, why}, "merge");
  EXPECT_FALSE(fs::exists(dir.file("m.csv")));
}

// A point refused from a config file names the line of the axis its reason names first (the value the file gave),
// unless a --set replaced that axis, which is then named as before.
TEST(CliInputs, ARefusedPointNamesTheLineOfItsAxis) {
  TempDir dir;
  const std::string config = dir.file("c.toml");
  write_text(config, "[experiment]\nname = \"c\"\nkind = \"spec_verify\"\n\n[axes]\nvariant = [\"kvbuffer_verify\"]\n"
                     "batch = [64]\ndraft_tokens = [4]\nbuffer_size = [16]\nstate_dtype = [\"fp32\"]\n"
                     "delta_dtype = [\"bf16\"]\n");
  const std::string why = "delta_dtype = bf16 is not supported with state_dtype = fp32";
  const std::string base =
      "sweep --dry-run --out " + shell_quote(dir.file("c.csv")) + " --config " + shell_quote(config);
  expect_refused(run_kvb(dir, base), {config + ":11: point variant=kvbuffer_verify", why}, "sweep");
  expect_refused(run_kvb(dir, base + " --set batch=256"), {config + ":11 --set batch=256: point", why}, "sweep");
  expect_refused(run_kvb(dir, base + " --set delta_dtype=bf16"), {config + " --set delta_dtype=bf16: point", why},
                 "sweep");
  EXPECT_FALSE(fs::exists(dir.file("c.csv")));
  // A reason that opens with a word that is no axis ("kernel = tensor_cores takes head_dim_k = ..."): the first axis
  // it names.
  const std::string tc = dir.file("tc.toml");
  write_text(tc, "[experiment]\nname = \"tc\"\nkind = \"spec_verify\"\n[axes]\nvariant = [\"kvbuffer_verify\"]\n"
                 "verify_kernel = [\"tensor_cores\"]\nhead_dim_k = [64]\n");
  expect_refused(run_kvb(dir, "sweep --dry-run --config " + shell_quote(tc)),
                 {tc + ":7: point", "kernel = tensor_cores takes head_dim_k = head_dim_v = 128"}, "sweep tc");
}

TEST(CliInputs, OverLongOutputPathsAreRefusedBeforeAnyWork) {
  TempDir dir;
  const std::string long_out = shell_quote(dir.file(std::string(300, 'x') + ".csv"));
  expect_refused(run_kvb(dir, "capacity --budget-gib 80 --no-probe --out " + long_out), {"--out", "per name"},
                 "capacity");  // no table printed first
  expect_refused(run_kvb(dir, "sweep --config experiments/decode_latency.toml --dry-run --out " + long_out),
                 {"--out", "per name"}, "sweep");
  expect_refused(run_kvb(dir, "merge " + long_out + " results/decode_latency.csv"), {"OUT", "per name"}, "merge");
  std::string deep = dir.path().string();
  while (deep.size() < 4200) deep += "/" + std::string(100, 'd');
  expect_refused(run_kvb(dir, "capacity --budget-gib 80 --no-probe --out " + shell_quote(deep + "/c.csv")),
                 {"--out", "the path has"}, "capacity, deep");
}

TEST(CliInputs, CapacityNeverReplacesAFileUnasked) {
  TempDir dir;
  const std::string readme = dir.file("README.md");
  write_text(readme, "# a readme\n");
  expect_refused(run_kvb(dir, "capacity --budget-gib 80 --no-probe --out " + shell_quote(readme)),
                 {"--out " + readme + ": exists (pass --force to replace it"}, "an existing --out");
  EXPECT_EQ(read_text(readme), "# a readme\n");

  // Its own --config: refused even with --force.
  const std::string config = dir.file("capacity.toml");
  fs::copy_file(kSource + "/experiments/capacity.toml", config);
  const std::string before = read_text(config);
  expect_refused(run_kvb(dir, "capacity --budget-gib 80 --no-probe --force --config " + shell_quote(config) +
                                  " --out " + shell_quote(config)),
                 {"--out " + config + ": is the input --config " + config}, "--out = --config");
  EXPECT_EQ(read_text(config), before);

  // Asked to: replaced, its mode kept.
  ::chmod(readme.c_str(), 0600);
  const Result r = run_kvb(dir, "capacity --budget-gib 80 --no-probe --force --out " + shell_quote(readme));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_text(readme).rfind("variant,buffer_size,", 0), 0u);
  struct stat st {};
  ::stat(readme.c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(CliInputs, MergeRefusesAnOutThatIsOneOfItsInputs) {
  TempDir dir;
  const std::string in = dir.file("in.csv");
  fs::copy_file(kSource + "/results/decode_aligned.csv", in);
  const std::string before = read_text(in);
  expect_refused(run_kvb(dir, "merge --force " + shell_quote(in) + " " + shell_quote(in)),
                 {"OUT " + in + ": is the input IN " + in}, "merge");
  EXPECT_EQ(read_text(in), before);
  // An input named twice is said to be so, and nothing is written.
  const std::string out = dir.file("out.csv");
  expect_refused(run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(in) + " " + shell_quote(in)),
                 {"IN " + in + ": given twice"}, "merge twice");
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliInputs, ResultCsvsAreJudgedAlikeByEveryCommand) {
  TempDir dir;
  const std::string good = shell_quote(kCases + "valid_bom_crlf.csv");
  // BOM and CRLF: a CSV like any other.
  Result r = run_kvb(dir, "compare " + good + " " + good);
  EXPECT_EQ(r.code, 0) << r.err;
  // A missing batch column, p10 above p90, a NaN: named by file, line and column, in compare and merge alike.
  for (const auto& [file, needle] : std::vector<std::pair<std::string, std::string>>{
           {"no_batch_column.csv", ":1: no column 'batch'"},
           {"p10_above_p90.csv", ":2: latency_us_p10 = 60, latency_us_median = 54.8587"},
           {"nan_latency.csv", ":2: latency_us_p90 = 'nan'"},
           {"cut_mid_line.csv", ":3: malformed CSV"}}) {
    expect_refused(run_kvb(dir, "compare " + good + " " + shell_quote(kCases + file)), {kCases + file + needle},
                   "compare " + file);
    expect_refused(run_kvb(dir, "merge " + shell_quote(dir.file("m.csv")) + " " + shell_quote(kCases + file)),
                   {kCases + file + needle}, "merge " + file);
    EXPECT_FALSE(fs::exists(dir.file("m.csv")));
  }
}

/// The index of `column` in t's header (the header's size when it has none).
size_t column_of(const CsvTable& t, const std::string& column) {
  return size_t(std::find(t.header.begin(), t.header.end(), column) - t.header.begin());
}

/// The header and first row of the committed result CSV `name`, with `column` of that row set to `value`.
std::string first_row_with(const std::string& name, const std::string& column, const std::string& value) {
  CsvTable t = parse_csv(read_text(kSource + "/results/" + name), name);
  t.rows.resize(1);
  const size_t c = column_of(t, column);
  EXPECT_LT(c, t.header.size()) << name << " has no column " << column;
  if (c < t.header.size()) t.rows[0][c] = value;
  return format_csv(t);
}

TEST(CliInputs, MergeAndCompareRefuseAxisValuesNoSweepWrites) {
  TempDir dir;
  const std::string out = dir.file("out.csv");
  // The allowed values are those of the sweep's own axes (the message a config giving the value gets).
  for (const auto& [name, column, value, allowed] : std::vector<std::tuple<std::string, std::string, std::string,
                                                                           std::string>>{
           {"decode_latency.csv", "state_dtype", "fp16", "(allowed: fp32, bf16, or empty for fp32)"},
           {"decode_latency.csv", "launch", "foo", "is not known (allowed: plain, pdl)"},
           {"buffer_form.csv", "buffer_form", "bar", "is not known (allowed: delta, raw)"},
           {"spec_verify_kernels.csv", "verify_kernel", "warp_magic",
            "is not known (allowed: automatic, cuda_cores, tensor_cores, staged)"},
           {"spec_verify.csv", "accepted", "1.5", "is not allowed (allowed: all, none, or an acceptance rate"},
           {"short_context.csv", "batch", "5000", "is out of range (allowed: integers 1 to 4096)"}}) {
    const std::string bad = dir.file(column + ".csv");
    write_text(bad, first_row_with(name, column, value));
    const std::string needle = bad + ":2: " + column + " = '" + value + "' ";
    expect_refused(run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(bad)), {needle, allowed},
                   "merge " + column);
    EXPECT_FALSE(fs::exists(out)) << column;
    const std::string good = shell_quote(kSource + "/results/" + name);
    expect_refused(run_kvb(dir, "compare " + good + " " + shell_quote(bad)), {needle, allowed},
                   "compare " + column);
    expect_refused(run_kvb(dir, "compare " + shell_quote(bad) + " " + good), {needle, allowed},
                   "compare baseline " + column);
  }
  // An axis that does not apply to the row's variant (buffer_form of a recurrent point) is empty, and passes.
  const std::string recurrent = dir.file("recurrent.csv");
  write_text(recurrent, first_row_with("decode_latency.csv", "buffer_form", ""));
  const Result r = run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(recurrent));
  EXPECT_EQ(r.code, 0) << r.err;
}

// A row whose values are each allowed but not together (a point the sweep would refuse before running it) is refused
// by merge and compare too, naming the file's line and the sweep's reason.
TEST(CliInputs, MergeAndCompareRefuseRowsNoSweepRuns) {
  TempDir dir;
  const std::string out = dir.file("out.csv");
  for (const auto& [name, when_column, when_value, column, value, reason] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>>{
           {"spec_verify_bf16_deltas_h100.csv", "delta_dtype", "bf16", "state_dtype", "fp32",
            "delta_dtype = bf16 is not supported with state_dtype = fp32"},
           {"buffer_form.csv", "buffer_form", "raw", "launch", "pdl",
            "launch = pdl is not supported with buffer_form = raw"}}) {
    CsvTable t = parse_csv(read_text(kSource + "/results/" + name), name);
    ASSERT_LT(column_of(t, when_column), t.header.size());
    ASSERT_LT(column_of(t, column), t.header.size());
    const auto row = std::find_if(t.rows.begin(), t.rows.end(), [&](const std::vector<std::string>& r) {
      return r[column_of(t, when_column)] == when_value;
    });
    ASSERT_NE(row, t.rows.end()) << name;
    std::vector<std::string> bad_row = *row;
    bad_row[column_of(t, column)] = value;
    t.rows = {bad_row};
    const std::string bad = dir.file(column + ".csv");
    write_text(bad, format_csv(t));
    const std::vector<std::string> needles = {bad + ":2: " + reason, "(a point no sweep runs)"};
    expect_refused(run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(bad)), needles, "merge " + name);
    EXPECT_FALSE(fs::exists(out)) << name;
    expect_refused(run_kvb(dir, "compare " + shell_quote(kSource + "/results/" + name) + " " + shell_quote(bad)),
                   needles, "compare " + name);
  }
}

// A CSV written before spec_verify gained verify_kernel: its delta-form rows measured the CUDA-core kernel (the
// axis's older value), its raw-form rows the raw kernel (the default, automatic, the only one the raw form takes).
// Merge writes them so, and what it writes reads back.
TEST(CliInputs, AnOlderVerifyCsvMergesIntoOneThatReadsBack) {
  TempDir dir;
  const std::string out = dir.file("m.csv");
  Result r = run_kvb(dir, "merge " + shell_quote(out) + " " + shell_quote(kSource + "/results/buffer_form_verify.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  const CsvTable t = parse_csv(read_text(out), out);
  ASSERT_LT(column_of(t, "verify_kernel"), t.header.size());
  size_t raw = 0, delta = 0;
  for (const auto& row : t.rows) {
    const bool is_raw = row[column_of(t, "buffer_form")] == "raw";
    EXPECT_EQ(row[column_of(t, "verify_kernel")], is_raw ? "automatic" : "cuda_cores");
    (is_raw ? raw : delta) += 1;
  }
  EXPECT_GT(raw, 0u);
  EXPECT_GT(delta, 0u);
  r = run_kvb(dir, "compare " + shell_quote(out) + " " + shell_quote(out));
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(CliInputs, CheckGoldenTellsAFileCutShortFromAFailure) {
  TempDir dir;
  const std::string cut = dir.file("cut.gdn");
  const std::string text = read_text(std::string(KVB_TEST_DATA_DIR) + "/golden/t1_no_state.gdn");
  write_text(cut, text.substr(0, text.size() - 3));  // in the middle of the last number, no line end
  const Result r = run_kvb(dir, "check-golden " + shell_quote(cut));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(cut + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the last line has no line end"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  const Result folder = run_kvb(dir, "check-golden " + shell_quote(dir.path().string()));
  EXPECT_EQ(folder.code, 2);
  EXPECT_NE(folder.err.find("is a directory"), std::string::npos) << folder.err;
}

/// A copy of what kvb reproduce reads, to run it from: experiments/, plots/, the golden cases, results/.
struct ReproduceTree : ::testing::Test {
  TempDir dir;
  fs::path root = dir.path() / "repo";
  void SetUp() override {
    if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present: kvb reproduce would run the GPU sweeps";
    const auto copy = fs::copy_options::recursive;
    for (const char* d : {"experiments", "plots", "results", "tests/data/golden"}) {
      fs::create_directories(root / d);
      fs::copy(fs::path(kSource) / d, root / d, copy);
    }
  }
  /// Every file under results/, with its content.
  std::map<std::string, std::string> results() const {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root / "results"))
      if (e.is_regular_file()) out[e.path().string()] = read_text(e.path().string());
    return out;
  }
};

TEST_F(ReproduceTree, AMalformedCommittedCsvStopsItBeforeAnyFigureOrFile) {
  const std::string decode = (root / "results/decode_latency.csv").string();
  const std::string text = read_text(decode);
  write_text(decode, text.substr(0, 30000));  // cut mid-line
  const auto before = results();
  const Result r = run_kvb(dir, "reproduce --force", root.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("results/decode_latency.csv:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("malformed CSV"), std::string::npos) << r.err;
  EXPECT_EQ(results(), before) << "no figure redrawn, no capacity_model.csv written";
}

// The state-dtype figures' and the accuracy figure's CSVs too: each is validated before the capacity model or a figure
// is written.
TEST_F(ReproduceTree, AnyCsvAFigureReadsStopsItBeforeAnyFile) {
  for (const char* name : {"accuracy.csv", "decode_state_dtype.csv", "spec_verify_state_dtype.csv"}) {
    SCOPED_TRACE(name);
    const std::string csv = (root / "results" / name).string();
    const std::string text = read_text(csv);
    const size_t second_line = text.find('\n') + 1;
    write_text(csv, text + text.substr(second_line, text.find('\n', second_line) + 1 - second_line));  // a row again
    const std::string out = dir.file(std::string("out_") + name);
    const Result r = run_kvb(dir, "reproduce --out-dir " + shell_quote(out), root.string());
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(std::string("results/") + name + ":"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is listed twice"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << "nothing written";
    write_text(csv, text);
  }
}

TEST_F(ReproduceTree, NoGoldenCasesIsNotAPassedCheck) {
  for (const auto& e : fs::directory_iterator(root / "tests/data/golden")) fs::remove(e.path());
  const auto before = results();
  const std::string out = dir.file("out");
  const Result r = run_kvb(dir, "reproduce --no-plots --out-dir " + shell_quote(out), root.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "kvb: tests/data/golden holds no gdn-case files (allowed: the repository's "
                   "tests/data/golden/*.gdn, such as draft4.gdn)\n");
  EXPECT_FALSE(fs::exists(out + "/capacity_model.csv"));
  EXPECT_EQ(results(), before);
  // A gdn-case "file" that is a folder is found before the first step (nothing printed on stdout), and so is a
  // golden folder that is a file.
  fs::create_directories(root / "tests/data/golden/case.gdn");
  const Result folder = run_kvb(dir, "reproduce --no-plots --out-dir " + shell_quote(out), root.string());
  EXPECT_EQ(folder.code, 2) << folder.out << folder.err;
  EXPECT_EQ(folder.out, "");
  EXPECT_NE(folder.err.find("tests/data/golden/case.gdn: is a directory"), std::string::npos) << folder.err;
  fs::remove_all(root / "tests/data/golden");
  write_text((root / "tests/data/golden").string(), "not a folder\n");
  const Result file = run_kvb(dir, "reproduce --no-plots --out-dir " + shell_quote(out), root.string());
  EXPECT_EQ(file.code, 2) << file.out << file.err;
  EXPECT_EQ(file.err, "kvb: tests/data/golden: not a folder (allowed: the repository's folder of gdn-case files)\n");
  EXPECT_EQ(results(), before);
}

TEST_F(ReproduceTree, FiguresAlreadyThereNeedForce) {
  const auto before = results();
  const Result r = run_kvb(dir, "reproduce", root.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--out-dir: results/figures holds"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(results(), before);
  // An existing capacity model too.
  const std::string out = dir.file("out");
  fs::create_directories(out);
  write_text(out + "/capacity_model.csv", "old\n");
  const Result cap = run_kvb(dir, "reproduce --no-plots --out-dir " + shell_quote(out), root.string());
  EXPECT_EQ(cap.code, 2) << cap.out << cap.err;
  EXPECT_NE(cap.err.find("capacity_model.csv: exists (pass --force to replace it, or name another folder)"),
            std::string::npos)
      << cap.err;
  EXPECT_EQ(read_text(out + "/capacity_model.csv"), "old\n");
}

}  // namespace
}  // namespace kvb
