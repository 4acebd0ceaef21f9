// CSV quoting and parsing (csv.h).
#include "harness/sweep/csv.h"

#include <ctime>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "harness/sweep/input_file.h"

namespace kvb {

namespace fs = std::filesystem;

std::vector<std::string> csv_columns(const ExperimentKind& kind) {
  std::vector<std::string> cols{"experiment"};
  for (const auto& axis : kind.axes) cols.push_back(axis.name);
  for (const auto& c : kind.result_columns) cols.push_back(c);
  for (const auto& c : csv_metadata_columns()) cols.push_back(c);
  return cols;
}

std::string csv_quote(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_quote(fields[i]);
  }
  return out + '\n';
}

CsvTable parse_csv(const std::string& input, const std::string& origin) {
  // A byte-order mark is no part of the first column's name (spreadsheets save UTF-8 CSVs with one).
  const std::string_view bom = "\xEF\xBB\xBF";
  const std::string_view text =
      std::string_view(input).substr(std::string_view(input).rfind(bom, 0) == 0 ? bom.size() : 0);
  std::vector<std::vector<std::string>> records;
  std::vector<size_t> record_lines;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;       // inside a quoted field
  bool field_started = false;
  size_t line = 1, record_line = 1;
  auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record_lines.push_back(record_line);
    record.clear();
    field_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
          if (i + 1 < text.size() && text[i + 1] != ',' && text[i + 1] != '\n' && text[i + 1] != '\r')
            throw UsageError(fmt::format("{}:{}: malformed CSV: text after a closing quote", origin, line));
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (field_started)
        throw UsageError(fmt::format("{}:{}: malformed CSV: quote inside an unquoted field", origin, line));
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\r') {
      // CRLF: the LF ends the record. A carriage return alone (outside quotes, where the writer puts every one) is
      // no line end RFC 4180 knows, nor field text: refused, so that a record it ended does not run into the next.
      if (i + 1 >= text.size() || text[i + 1] != '\n')
        throw UsageError(fmt::format("{}:{}: malformed CSV: a carriage return without a line feed", origin, line));
    } else if (c == '\n') {
      end_record();
      record_line = ++line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) throw UsageError(fmt::format("{}:{}: malformed CSV: unterminated quoted field", origin, record_line));
  // Every record this project writes ends with a newline: a last record without one was cut short.
  if (field_started || !record.empty())
    throw UsageError(fmt::format("{}:{}: malformed CSV: the last record has no line end (a truncated file?)", origin,
                                 record_line));

  CsvTable table;
  if (records.empty()) return table;
  table.header = std::move(records.front());
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() == 1 && records[r][0].empty()) continue;  // blank line
    if (records[r].size() != table.header.size())
      throw UsageError(fmt::format("{}:{}: malformed CSV: {} fields, the header has {}", origin, record_lines[r],
                                   records[r].size(), table.header.size()));
    table.rows.push_back(std::move(records[r]));
    table.lines.push_back(record_lines[r]);
  }
  return table;
}

std::string format_csv(const CsvTable& table) {
  std::string out = csv_line(table.header);
  for (const auto& row : table.rows) out += csv_line(row);
  return out;
}

CsvTable read_csv_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return {};
  return parse_csv(read_input_file(path, "--out", "a result CSV of kvb sweep to resume"), path);
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kvb
