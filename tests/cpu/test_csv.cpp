// CSV quoting, parsing and atomic writes (harness/sweep/csv.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/sweep/csv.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::read_text;
using test::TempDir;
using test::write_text;

TEST(Csv, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_quote("plain"), "plain");
  EXPECT_EQ(csv_quote(""), "");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_quote("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_line({"x", "y,z", ""}), "x,\"y,z\",\n");
}

TEST(Csv, RoundTripsAwkwardFields) {
  CsvTable table;
  table.header = {"experiment", "status", "note"};
  table.rows = {{"e1", "ok", ""},
                {"e1", "failed: out of memory, batch 512", "\"quoted\" text"},
                {"e,2", "failed: line one\nline two", "cr\r\nlf"},
                {"", "", ""}};
  const std::string text = format_csv(table);
  const CsvTable back = parse_csv(text, "mem.csv");
  EXPECT_EQ(back.header, table.header);
  EXPECT_EQ(back.rows, table.rows);
}

TEST(Csv, ParsesCrlfAndRejectsMalformed) {
  const CsvTable t = parse_csv("a,b\r\n1,\"x,y\"\r\n", "crlf.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", "x,y"}));
  EXPECT_THROW(parse_csv("a,b\n1,\"open\n", "bad.csv"), UsageError);
  EXPECT_THROW(parse_csv("a,b\n1,2,3\n", "bad.csv"), UsageError);
  EXPECT_THROW(parse_csv("a,b\n1,\"x\"y\n", "bad.csv"), UsageError);
  // A carriage return outside quotes ends no record and is no field text; inside quotes it is the field's.
  for (const char* text : {"a,b\n1,2\r3,4\n", "a,b\r1,2\r", "a,b\n1,x\ry\n", "a,b\n1,\"x\"\ry\n", "a,b\n1,2\r"}) {
    try {
      parse_csv(text, "cr.csv");
      ADD_FAILURE() << "expected UsageError";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("cr.csv:"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(": malformed CSV: a carriage return without a line feed"), std::string::npos);
    }
  }
  EXPECT_EQ(parse_csv("a,b\n1,\"x\ry\"\n", "cr.csv").rows[0][1], "x\ry");
  try {
    parse_csv("a,b\n1\n", "named.csv");
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("named.csv"), std::string::npos);
  }
}

TEST(Csv, AtomicWriteReplacesWholeFile) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  write_file_atomic(path, "a,b\n1,2\n");
  EXPECT_EQ(read_text(path), "a,b\n1,2\n");
  write_file_atomic(path, "a,b\n3,4\n5,6\n");
  EXPECT_EQ(read_text(path), "a,b\n3,4\n5,6\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Csv, FailedAtomicWriteLeavesOldFileAndNoTemp) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  write_file_atomic(path, "a,b\n1,2\n");
  // A user's file named PATH.tmp is never touched: the temporary has a name of its own.
  write_text(path + ".tmp", "mine\n");
  write_file_atomic(path, "a,b\n3,4\n");
  EXPECT_EQ(read_text(path), "a,b\n3,4\n");
  EXPECT_EQ(read_text(path + ".tmp"), "mine\n");
  std::filesystem::remove(path + ".tmp");

  // The rename fails (the target is a folder): the temporary is removed, nothing else is left beside it.
  const std::string folder = dir.file("folder.csv");
  std::filesystem::create_directories(folder + "/inside");
  EXPECT_THROW(write_file_atomic(folder, "a\n1\n"), std::runtime_error);
  EXPECT_TRUE(std::filesystem::is_directory(folder));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2u);  // r.csv and folder.csv

  // A folder that cannot be made (a file is in the way): nothing is created.
  write_text(dir.file("plain"), "x");
  EXPECT_THROW(write_file_atomic(dir.file("plain/sub/r.csv"), "a\n"), std::runtime_error);
  EXPECT_EQ(read_text(dir.file("plain")), "x");
  // Missing folders are made.
  write_file_atomic(dir.file("no/such/dir/r.csv"), "a\n");
  EXPECT_EQ(read_text(dir.file("no/such/dir/r.csv")), "a\n");
}

TEST(Csv, TruncatedLastRecordIsMalformed) {
  EXPECT_THROW(parse_csv("a,b\n1,2\n3,", "t.csv"), UsageError);
  EXPECT_THROW(parse_csv("a,b\n1,2\n3,4", "t.csv"), UsageError);
  EXPECT_EQ(parse_csv("a,b\n1,2\n3,4\n", "t.csv").rows.size(), 2u);
}

TEST(Csv, OutputWritableChecks) {
  TempDir dir;
  EXPECT_NO_THROW(check_output_writable(dir.file("r.csv")));
  EXPECT_NO_THROW(check_output_writable(dir.file("new/deeper/r.csv")));  // created later
  EXPECT_FALSE(std::filesystem::exists(dir.file("new")));                  // the check creates nothing
  write_text(dir.file("plainfile"), "x");
  try {
    check_output_writable(dir.file("plainfile/r.csv"));
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_output_writable(dir.path().string()), UsageError);  // a folder, not a file
  EXPECT_THROW(check_output_writable(""), UsageError);
}

TEST(Csv, ReadMissingFileIsEmpty) {
  TempDir dir;
  const CsvTable t = read_csv_file(dir.file("absent.csv"));
  EXPECT_TRUE(t.header.empty());
  EXPECT_TRUE(t.rows.empty());
}

}  // namespace
}  // namespace kvb
