"""The validation of result CSVs that kvb applies to every file it reads (harness/sweep/result_csv.h), for the figures.

The rules are kvb's, over the same schemas: result_schemas.csv beside this module lists each kind's columns as kvb
writes them today (the CPU test CsvValidation.SchemasFileMatchesTheKinds keeps it equal to the kinds kvb knows),
result_axes.csv what each kind's axis values may be (CsvValidation.AxesFileMatchesTheKinds keeps it equal to the
kinds' axis checks), and the files in tests/data/csv/cases/ are checked against both implementations
(tests/data/csv/cases.csv).

 - the text: UTF-8 (a byte-order mark is skipped), CRLF or LF line ends, every record as many fields as the header,
   and a line end after the last one (a file without one was cut short); parsed as kvb parses it (`parse`): a quote
   only around a whole field, a carriage return without a line feed after it refused outside quotes (inside them it
   is the field's), a line of only "" blank; then every column name and cell UTF-8 (a byte outside a well-formed
   character, such as 0xE9 alone, an encoded surrogate or an overlong form, is refused naming the line, the column
   and the byte);
 - known columns: the header is one kind's columns, less some of those an older kvb did not write, in its order;
 - latencies: each NAME_us_median, NAME_us_p10, NAME_us_p90 holds, where set, a finite number > 0 with
   p10 <= median <= p90, and is set in every row whose status is ok;
 - numbers in ASCII digits 0-9 only (another script's digits are refused, as kvb refuses them);
 - counts: whole numbers >= 0 where set;
 - sizes (batch, buffer_size, draft_tokens, layers, heads_qk, heads_v, head_dim_k, head_dim_v): whole numbers >= 1
   where set; floors, ratios to them and bandwidths (columns ending floor_us, _over_floor, _gbps): finite numbers > 0
   where set; model bytes (ending model_bytes, model_read_bytes, model_write_bytes): finite numbers >= 0 where set;
 - state_dtype, where the kind has it: fp32, bf16, or empty (a row written before the column: fp32);
 - timestamp, where set: a UTC time as YYYY-MM-DDTHH:MM:SSZ (a file cut inside it and given a line end is refused)
   that exists: month 01-12, day 01 to the month's length (29 February in leap years only), hour 00-23, minute and
   second 00-59 (kvb and the figures alike);
 - capacity: where set, bytes_per_request > 0 and max_requests_model, max_requests_measured x bytes_per_request
   <= budget_bytes;
 - one row per point (the kind's key columns), and one GPU (every non-empty gpu value the same);
 - axis values, after every rule above holds for every row (as kvb merge and kvb compare check them, after the
   others): each non-empty value of an axis column one that a sweep of the kind could have written (result_axes.csv:
   a listed word, an integer in a range or from a set, or for accepted also a rate strictly between 0 and 1), axis by
   axis in the kind's order; a value allowed but for white space around it is refused as such. Each axis is set where
   it applies to the row's variant (result_axes.csv's applies_to; the variant always) and empty where it does not (a
   CSV written before the kind gained an axis lacks its column).

A file that breaks a rule raises CsvError with one line: "PATH:LINE: what is wrong (what is allowed)", a line break
in a value, a column name or the path written \\n (\\r for a carriage return) and a NUL \\x00, as kvb writes it;
one_line also shortens each run of over 80 characters without a space, as kvb prints its errors.
"""

from __future__ import annotations

import csv
import functools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SCHEMAS_CSV = Path(__file__).resolve().with_name("result_schemas.csv")
AXES_CSV = Path(__file__).resolve().with_name("result_axes.csv")

# Digits are ASCII 0-9 only, as kvb reads them: Python's \d, int() and float() would also take other scripts' digits
# (Arabic-Indic, full-width), which kvb refuses.
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_COUNT = re.compile(r"[0-9]+")
_SIZE_COLUMNS = ("batch", "buffer_size", "draft_tokens", "layers", "heads_qk", "heads_v", "head_dim_k", "head_dim_v")


_ESCAPES = {chr(c): f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if chr(c) != "\t"}
_ESCAPES.update({"\n": "\\n", "\r": "\\r", "\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
# A byte that is no UTF-8 text reaches Python as a lone surrogate U+DC80..U+DCFF (surrogateescape: a path, an argument):
# written as the byte, \xNN, as kvb writes it.
_ESCAPES.update({chr(0xDC00 + b): f"\\x{b:02x}" for b in range(0x80, 0x100)})


def escaped(message: str) -> str:
    """`message` with each line feed written \\n and each carriage return \\r, the other control characters but tab
    (NUL, VT, FF, the separators FS to RS, ESC, DEL: a terminal or an editor may break a line at them or act on them)
    as \\xNN, NEL, U+2028 and U+2029 as \\u0085, \\u2028 and \\u2029 (a quoted CSV cell, a column name or a path may
    hold any of them), and a byte that is no UTF-8 text (a lone surrogate of surrogateescape) as \\xNN, as kvb's
    line_escaped (harness/sweep/experiment_kind.cpp) writes them in every error."""
    return "".join(_ESCAPES.get(c, c) for c in message)


def entry_dtypes_of(variant: str, buffer_form: str, delta_dtype: str = "") -> str:
    """The entry_dtypes value of a row, as kvb's entry_dtypes_of (harness/sweep/entry_dtypes.h) gives it: the element
    types of a KVBuffer variant's buffered entries in its buffer form ("raw", else the delta form, whose deltas are
    bf16 where delta_dtype reads "bf16", else fp32), "" for a variant that buffers nothing."""
    if variant not in ("kvbuffer", "kvbuffer_verify", "kvbuffer_decode"):
        return ""
    if buffer_form == "raw":
        return "k=bf16 v=bf16 a=bf16 b=bf16"
    return "k=bf16 u=bf16 g=fp32" if delta_dtype == "bf16" else "k=bf16 u=fp32 g=fp32"


def shown_value(value: str) -> str:
    """`value` as an error quotes it, as kvb's shown_value does: whole up to 80 characters, else its first 72 and its
    length, so that a pasted value or a long path cannot bury the message."""
    return value if len(value) <= 80 else f"{value[:72]}... ({len(value)} characters)"


# One character of escaped text: an escape `escaped` writes, or one code point.
_ESCAPED_CHARACTER = re.compile(r"\\(?:[nr]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})|.", re.DOTALL)


def shown_escaped_value(text: str) -> str:
    """shown_value of `escaped` text, as kvb's shown_escaped_value: each escape (\\n, \\xNN, \\u2028, ...) counts as
    one character and is never cut, so that a value is shown with the count it has before it is escaped."""
    chars = _ESCAPED_CHARACTER.findall(text)
    return text if len(chars) <= 80 else f"{''.join(chars[:72])}... ({len(chars)} characters)"


def _shown_word(word: str) -> str:
    """A run of characters without a space as kvb's one_line shows it: the part inside any opening quotes or
    parenthesis and closing quotes, parenthesis or punctuation (:,;) through shown_escaped_value, those kept."""
    first = len(word) - len(word.lstrip("'\"("))
    end = len(word.rstrip("'\":,;)"))
    if end <= first:
        return word
    return word[:first] + shown_escaped_value(word[first:end]) + word[end:]


def one_line(message: str) -> str:
    """`message` as one line, as kvb prints its errors (harness/cli/cli_checks.cpp one_line): escaped, then every run
    of characters without a space (a value, a path, a quoted line) over 80 characters shortened as shown_value
    shortens it, so that a pasted value cannot bury the message."""
    return " ".join(_shown_word(word) for word in escaped(message).split(" "))


def _nearest_folder(path: Path) -> Path:
    """The nearest folder of `path` (itself included) that exists; the root when none does."""
    for folder in (path, *path.parents):
        try:
            if folder.is_dir():
                return folder
        except OSError:  # a name in it too long to look up: a folder above it answers
            continue
    return Path(path.anchor or os.sep)


def path_too_long(path, inside: str = "") -> str | None:
    """What keeps `path` from fitting the file system's limits, as the end of a one-line error, or None: a name in it
    over NAME_MAX bytes, or the whole path (made absolute), with os.sep and `inside` (a file to be made in it) added,
    PATH_MAX bytes or more. The limits are those of its nearest existing folder (255 and 4096 where it does not say),
    checked before anything looks the path up, which would fail with a traceback instead."""
    p = Path(os.path.abspath(path))
    folder = _nearest_folder(p)

    def limit(name: str, fallback: int) -> int:
        try:
            value = os.pathconf(folder, name)
        except (OSError, ValueError):
            return fallback
        return value if value and value > 0 else fallback

    name_max, path_max = limit("PC_NAME_MAX", 255), limit("PC_PATH_MAX", 4096)
    for part in Path(path).parts:
        size = len(os.fsencode(part))
        if size > name_max:
            return f"the name '{part[:40]}...' has {size} bytes (allowed: at most {name_max} per name)"
    size = len(os.fsencode(str(p)))
    room = len(os.fsencode(os.sep + inside)) if inside else 0
    if size + room >= path_max:
        fits = f", so that {inside} fits in it" if inside else ""
        return f"the path has {size} bytes (allowed: fewer than {path_max - room}{fits})"
    return None


def unsearchable_folder(path) -> tuple[Path, OSError] | None:
    """The first folder on the way to `path` in which a name cannot be looked up (no search permission for this user),
    with the system's error, or None: looking `path` up through it (Path.exists, is_dir) raises PermissionError where
    the callers give one line instead. Parts are looked up in order, so the folder named is the outermost such one;
    where a link's target lies past one, the folder is found on the link's way (as the link gives it). A part that
    is missing or not a folder ends the search with None: that is for the callers' other checks."""
    parts = Path(path).parts
    for i in range(1, len(parts) + 1):
        head = Path(*parts[:i])
        try:
            os.stat(head)
        except PermissionError as e:
            if os.path.islink(head):  # the link is there; where it leads is not reachable
                return unsearchable_folder(Path(head.parent, os.readlink(head))) or (head, e)
            return head.parent, e
        except OSError:
            return None
    return None


class CsvError(ValueError):
    """A result CSV that is malformed or breaks a rule; str() is the message on one line (NULs and line breaks
    written as `escaped` writes them), whole, as kvb's UsageError keeps it; one_line shortens it for printing."""

    def __init__(self, message: str):
        super().__init__(escaped(message))


@dataclass(frozen=True)
class Schema:
    """What a result CSV of one kind holds (the fields of kvb's CsvSchema)."""

    kind: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    added_later: tuple[str, ...]
    counts: tuple[str, ...]

    def expected_header(self, header) -> list[str]:
        """The columns less the added-later ones `header` lacks: the header an older file of the kind has."""
        return [c for c in self.columns if c not in self.added_later or c in header]

    def latency_groups(self) -> list[str]:
        """NAME_us of every NAME_us_median whose NAME_us_p10 and NAME_us_p90 are columns too."""
        suffix = "_us_median"
        return [c[: -len("_median")] for c in self.columns
                if c.endswith(suffix) and len(c) > len(suffix)
                and c[: -len("median")] + "p10" in self.columns and c[: -len("median")] + "p90" in self.columns]


@functools.lru_cache(maxsize=None)
def schemas(path: Path = SCHEMAS_CSV) -> dict[str, Schema]:
    """The schemas of result_schemas.csv (columns kind, column, key, added_later, count; yes/no flags), by kind, in
    the file's order."""
    parts: dict[str, dict[str, list[str]]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            p = parts.setdefault(row["kind"], {"columns": [], "key": [], "added_later": [], "counts": []})
            p["columns"].append(row["column"])
            for flag, field in (("key", "key"), ("added_later", "added_later"), ("count", "counts")):
                if row[flag] == "yes":
                    p[field].append(row["column"])
    return {k: Schema(k, *(tuple(p[f]) for f in ("columns", "key", "added_later", "counts"))) for k, p in parts.items()}


@dataclass(frozen=True)
class AxisRule:
    """What one axis of a kind allows (a row of result_axes.csv, kvb's AxisCheck): `rule` "words" (one of `words`),
    "integers" (a decimal integer from `low` to `high`), "integer_set" (a decimal integer equal to one of `words`) or
    "words_or_rate" (one of `words`, or a decimal number strictly between `low` and `high`); `allowed` the allowed
    values in words, as kvb's messages state them; `applies_to` the variants the axis matters for (a sweep sets it on
    their rows and leaves it empty on the others; empty for the variant axis itself)."""

    axis: str
    rule: str
    words: tuple[str, ...]
    low: str
    high: str
    allowed: str
    applies_to: tuple[str, ...]


@functools.lru_cache(maxsize=None)
def axis_rules(path: Path = AXES_CSV) -> dict[str, tuple[AxisRule, ...]]:
    """The axes of each kind (result_axes.csv: kind, axis, rule, words separated by spaces, low, high, allowed,
    applies_to separated by spaces), by kind, in the kind's axis order."""
    rules: dict[str, list[AxisRule]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["rule"] not in ("words", "integers", "integer_set", "words_or_rate"):
                raise ValueError(f"{path}: axis {row['kind']}.{row['axis']}: rule '{row['rule']}' is not known")
            rules.setdefault(row["kind"], []).append(AxisRule(row["axis"], row["rule"], tuple(row["words"].split()),
                                                              row["low"], row["high"], row["allowed"],
                                                              tuple(row["applies_to"].split())))
    return {kind: tuple(r) for kind, r in rules.items()}


_INTEGER = re.compile(r"[+-]?[0-9]+")
_LLONG = (-(2 ** 63), 2 ** 63 - 1)
_C_SPACE = " \t\n\v\f\r"  # what C's isspace calls white space, as kvb trims it


def _integer(text: str) -> int | None:
    """The integer in `text` as kvb's parse_integer reads it: the whole text one decimal integer, optionally signed,
    in range of a 64-bit signed integer; None otherwise."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if _LLONG[0] <= value <= _LLONG[1] else None


def _axis_reason(a: AxisRule, value: str) -> str:
    """"" when `a` allows `value`, else the reason kvb's check of the axis gives (harness/kinds/axis_checks.cpp, the
    accepted axis's in harness/kinds/verify_runner.cpp)."""
    if a.rule == "words":
        ok, how = value in a.words, "is not known"
    elif a.rule == "integers":
        x = _integer(value)
        if x is None and not _INTEGER.fullmatch(value):
            return f"{a.axis} = '{shown_value(value)}' is not an integer (allowed: {a.allowed})"
        ok, how = x is not None and int(a.low) <= x <= int(a.high), "is out of range"
    elif a.rule == "integer_set":
        x = _integer(value)
        ok, how = x is not None and x in {int(w) for w in a.words}, "is not supported"
    else:  # words_or_rate: strtod's reading, which refuses a subnormal number (ERANGE) as it refuses an overflow
        rate = _decimal(value)
        ok = value in a.words or (rate is not None and float(a.low) < rate < float(a.high)
                                  and rate >= sys.float_info.min)
        how = "is not allowed"
    return "" if ok else f"{a.axis} = '{shown_value(value)}' {how} (allowed: {a.allowed})"


def axis_refusal(a: AxisRule, value: str) -> str:
    """"" when axis `a` allows `value`, else kvb's AxisSpec::refusal: the check's reason, or "AXIS = 'VALUE' has white
    space around it (allowed: ...)" for a value the check takes once white space before and after it is removed."""
    reason = _axis_reason(a, value)
    if not reason:
        return ""
    trimmed = value.strip(_C_SPACE)
    if trimmed and trimmed != value and not _axis_reason(a, trimmed):
        return f"{a.axis} = '{shown_value(value)}' has white space around it (allowed: {a.allowed})"
    return reason


_UNQUOTED_RUN = re.compile(r'[^,"\r\n]+')


def parse(text: str, origin) -> tuple[list[str], list[list[str]], list[int]]:
    """(header, rows, the line each row starts on) of CSV `text`, read as kvb's parse_csv (harness/sweep/csv.cpp) reads
    it, so that both accept and refuse the same files; raises CsvError "ORIGIN:LINE: malformed CSV: ...".

    A field is quoted (doubled quotes inside, a comma, line end or the end of the text after its closing quote) or
    unquoted (no quote in it). A record ends at LF or CRLF; a carriage return without a line feed after it is refused
    outside quotes (inside them it is the field's). A line that holds no field, or only an empty quoted one (""), is blank
    and holds no row. Lines are counted by their line feeds."""
    if text.startswith("\ufeff"):
        text = text[1:]
    records: list[list[str]] = []
    record_lines: list[int] = []
    record: list[str] = []
    field: list[str] = []
    quoted = field_started = False
    line = record_line = 1
    i, n = 0, len(text)
    while i < n:
        if quoted:
            close = text.find('"', i)
            if close < 0:
                raise CsvError(f"{origin}:{record_line}: malformed CSV: unterminated quoted field")
            field.append(text[i:close])
            line += text.count("\n", i, close)
            if close + 1 < n and text[close + 1] == '"':
                field.append('"')
                i = close + 2
                continue
            quoted = False
            if close + 1 < n and text[close + 1] not in ",\n\r":
                raise CsvError(f"{origin}:{line}: malformed CSV: text after a closing quote")
            i = close + 1
            continue
        run = _UNQUOTED_RUN.match(text, i)
        if run:
            field.append(run.group())
            field_started = True
            i = run.end()
            continue
        c = text[i]
        if c == '"':
            if field_started:
                raise CsvError(f"{origin}:{line}: malformed CSV: quote inside an unquoted field")
            quoted = field_started = True
        elif c == ",":
            record.append("".join(field))
            field, field_started = [], False
        elif c == "\n":
            record.append("".join(field))
            records.append(record)
            record_lines.append(record_line)
            record, field, field_started = [], [], False
            line += 1
            record_line = line
        elif c == "\r":  # a CRLF's CR: the LF ends the record
            if i + 1 >= n or text[i + 1] != "\n":
                raise CsvError(f"{origin}:{line}: malformed CSV: a carriage return without a line feed")
        else:
            field.append(c)
            field_started = True
        i += 1
    if quoted:  # a quote that opens a field at the very end of the text
        raise CsvError(f"{origin}:{record_line}: malformed CSV: unterminated quoted field")
    # Every record kvb writes ends with a line end: a last record without one was cut short.
    if field_started or record:
        raise CsvError(f"{origin}:{record_line}: malformed CSV: the last record has no line end (a truncated file?)")
    if not records:
        return [], [], []
    header, rows, lines = records[0], [], []
    for record, start in zip(records[1:], record_lines[1:]):
        if record == [""]:  # a blank line
            continue
        if len(record) != len(header):
            raise CsvError(f"{origin}:{start}: malformed CSV: {len(record)} fields, the header has {len(header)}")
        rows.append(record)
        lines.append(start)
    return header, rows, lines


def _match_header(header: list[str], known: dict[str, Schema], origin) -> Schema:
    for i, c in enumerate(header):
        if c in header[:i]:
            raise CsvError(f"{origin}:1: column '{c}' appears twice in the header")
    best, best_shared = None, 0
    for s in known.values():
        if s.expected_header(header) == header:
            return s
        shared = sum(c in s.columns for c in header)
        if shared > best_shared:
            best, best_shared = s, shared
    if best is None or 2 * best_shared < len(header):
        raise CsvError(f"{origin}:1: not a result CSV of kvb: its header fits none of the kinds "
                       f"{', '.join(known)} (it starts '{header[0] if header else ''}')")
    allowed = f"the header of a {best.kind} CSV: {','.join(best.columns)}"
    for c in best.columns:
        if c not in header and c not in best.added_later:
            raise CsvError(f"{origin}:1: no column '{c}' ({allowed})")
    for c in header:
        if c not in best.columns:
            raise CsvError(f"{origin}:1: unknown column '{c}' ({allowed})")
    want = best.expected_header(header)
    for i, (got, expected) in enumerate(zip(header, want)):
        if got != expected:
            raise CsvError(f"{origin}:1: column '{got}' is out of place (column {i + 1} should be '{expected}'; "
                           f"{allowed})")
    raise CsvError(f"{origin}:1: the header does not fit ({allowed})")


def _decimal(text: str) -> float | None:
    return float(text) if _DECIMAL.fullmatch(text) else None


def key_axis_value(axis: str, value: str) -> str:
    """An axis value as a point's key reads it (kvb's key_axis_value, harness/sweep/table_keys.h): an empty state_dtype
    is fp32, any other value as it is."""
    return "fp32" if axis == "state_dtype" and not value else value


def canonical_axis_value(value: str) -> str:
    """The one spelling of an axis value, as kvb's canonical_axis_value writes it (harness/sweep/config.cpp): integers
    in plain decimal ("064", "+64" -> "64"), other numbers in their shortest form (".70" -> "0.7"); anything not written
    as a plain ASCII decimal number, and a number a double cannot hold (overflow, underflow, subnormal), unchanged.
    Rows are keyed by it and read with it, so that two spellings of one value are one point."""
    x = _integer(value)
    if x is not None:
        return str(x)
    d = _decimal(value)
    mantissa = re.split("[eE]", value)[0]
    if d is None or d in (float("inf"), float("-inf")):
        return value
    if (d == 0 and re.search("[1-9]", mantissa)) or 0 < abs(d) < sys.float_info.min:
        return value  # under a double's normal range: strtod's range error, which kvb keeps as written
    shortest = repr(d)  # the shortest digits that read back as d, in the form fmt's "{}" gives less a final ".0"
    return shortest[:-2] if shortest.endswith(".0") else shortest


_UTC_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _utc_timestamp(text: str) -> bool:
    """Whether `text` is a UTC time as YYYY-MM-DDTHH:MM:SSZ that exists: any year 0000-9999, month 01-12, day 01 to
    the month's length in the Gregorian calendar (29 February in a year divisible by 4 and not by 100, or by 400),
    hour 00-23, minute and second 00-59 (no leap second: the sweeps write the clock's time, which has none)."""
    m = _UTC_TIMESTAMP.fullmatch(text)
    if not m:
        return False
    year, month, day, hour, minute, second = (int(g) for g in m.groups())
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]
    return 1 <= day <= days and hour <= 23 and minute <= 59 and second <= 59


# A byte that is not UTF-8, as decoding with errors="surrogateescape" holds it: U+DC80 to U+DCFF for 0x80 to 0xFF.
_UNDECODED_BYTE = re.compile("[\udc80-\udcff]")


def _require_utf8(header: list[str], rows: list[list[str]], lines: list[int], origin) -> None:
    """Raises CsvError "ORIGIN:LINE: COLUMN holds a byte that is not UTF-8 text (0xBYTE, byte N of the value; ...)"
    for the first column name or cell that holds a byte outside a well-formed UTF-8 character (decoded by `read`
    with errors="surrogateescape"), header first, then row by row, left to right, as kvb's validation does."""
    def check(text: str, line: int, what: str, part: str) -> None:
        m = _UNDECODED_BYTE.search(text)
        if m:
            at = len(text[:m.start()].encode("utf-8", "surrogatepass")) + 1
            raise CsvError(f"{origin}:{line}: {what} holds a byte that is not UTF-8 text (0x{ord(m.group()) - 0xDC00:02X}, "
                           f"byte {at} of the {part}; allowed: UTF-8 text)")

    for i, name in enumerate(header):
        check(name, 1, f"the name of column {i + 1}", "name")
    for row, line in zip(rows, lines):
        for name, text in zip(header, row):
            check(text, line, name, "value")


def validate(header: list[str], rows: list[list[str]], lines: list[int], origin,
             known: dict[str, Schema] | None = None) -> Schema:
    """Checks a parsed result CSV against the rules (module docstring); returns the schema it follows. Raises
    CsvError naming ORIGIN, the line and the column."""
    known = schemas() if known is None else known
    if not header:
        raise CsvError(f"{origin}: empty file (allowed: a result CSV of kvb, its header first)")
    _require_utf8(header, rows, lines, origin)
    s = _match_header(header, known, origin)
    col = {c: i for i, c in enumerate(header)}
    groups = s.latency_groups()
    first_line: dict[tuple, int] = {}
    first_gpu, gpu_line = "", 0
    for row, line in zip(rows, lines):
        ok = "status" in col and row[col["status"]] == "ok"
        for g in groups:
            names = (f"{g}_p10", f"{g}_median", f"{g}_p90")
            values = []
            for name in names:
                text = row[col[name]]
                if not text:
                    if ok:
                        raise CsvError(f"{origin}:{line}: {name} is empty in a row whose status is ok (allowed: a "
                                       f"finite number of microseconds > 0)")
                    values.append(None)
                    continue
                v = _decimal(text)
                if v is None or not (v > 0) or v == float("inf"):
                    raise CsvError(f"{origin}:{line}: {name} = '{text}' (allowed: a finite number of microseconds > 0)")
                values.append(v)
            if None not in values and not (values[0] <= values[1] <= values[2]):
                raise CsvError(f"{origin}:{line}: {g}_p10 = {row[col[names[0]]]}, {g}_median = {row[col[names[1]]]}, "
                               f"{g}_p90 = {row[col[names[2]]]} (allowed: p10 <= median <= p90)")
        for c in s.counts:
            if c in col and row[col[c]] and not _COUNT.fullmatch(row[col[c]]):
                raise CsvError(f"{origin}:{line}: {c} = '{row[col[c]]}' (allowed: a whole number >= 0)")
        for c in header:
            text = row[col[c]]
            if not text:
                continue
            if c in _SIZE_COLUMNS and not (_COUNT.fullmatch(text) and int(text) >= 1):
                raise CsvError(f"{origin}:{line}: {c} = '{text}' (allowed: a whole number >= 1)")
            if c.endswith(("floor_us", "_over_floor", "_gbps")):
                v = _decimal(text)
                if v is None or not (0 < v < float("inf")):
                    raise CsvError(f"{origin}:{line}: {c} = '{text}' (allowed: a finite number > 0)")
            if c.endswith(("model_bytes", "model_read_bytes", "model_write_bytes")):
                v = _decimal(text)
                if v is None or not (0 <= v < float("inf")):
                    raise CsvError(f"{origin}:{line}: {c} = '{text}' (allowed: a finite number >= 0)")
        if "state_dtype" in col and row[col["state_dtype"]] not in ("", "fp32", "bf16"):
            raise CsvError(f"{origin}:{line}: state_dtype = '{row[col['state_dtype']]}' (allowed: fp32, bf16, or empty "
                           f"for fp32)")
        if "stateless" in col and row[col["stateless"]] not in ("", "true", "false"):
            raise CsvError(f"{origin}:{line}: stateless = '{row[col['stateless']]}' (allowed: true or false; empty "
                           f"where the point failed)")
        delta = row[col["delta_dtype"]] if "delta_dtype" in col else ""
        # A delta_dtype the axis rules refuse, or an empty one on a kvbuffer_verify row, is theirs to report.
        delta_unread = "delta_dtype" in col and delta not in ("fp32", "bf16") and (
            bool(delta) or ("variant" in col and row[col["variant"]] == "kvbuffer_verify"))
        if "entry_dtypes" in col and row[col["entry_dtypes"]] and not delta_unread:  # empty: failed, or older
            variant = row[col["variant"]] if "variant" in col else ""
            form = row[col["buffer_form"]] if "buffer_form" in col else ""
            expected = entry_dtypes_of(variant, form, delta)
            if row[col["entry_dtypes"]] != expected:
                where = f" in the {form} form" if form else ""
                allowed = f"'{expected}' or " if expected else ""
                raise CsvError(f"{origin}:{line}: entry_dtypes = '{row[col['entry_dtypes']]}' on a {variant} "
                               f"row{where} (allowed: {allowed}empty)")
        if "timestamp" in col and row[col["timestamp"]] and not _utc_timestamp(row[col["timestamp"]]):
            raise CsvError(f"{origin}:{line}: timestamp = '{row[col['timestamp']]}' (allowed: a UTC time as "
                           f"YYYY-MM-DDTHH:MM:SSZ, or empty)")
        if ok and "bytes_per_request" in col and "budget_bytes" in col and row[col["bytes_per_request"]]:
            # capacity: where set, bytes_per_request > 0 and the requests fit the budget
            each_text, budget_text = row[col["bytes_per_request"]], row[col["budget_bytes"]]
            each, budget = _decimal(each_text), _decimal(budget_text)
            if each is None or not (0 < each < float("inf")):
                raise CsvError(f"{origin}:{line}: bytes_per_request = '{each_text}' (allowed: a number of bytes > 0)")
            for c in ("max_requests_model", "max_requests_measured"):
                if c in col and row[col[c]] and budget is not None and float(row[col[c]]) * each > budget:
                    raise CsvError(f"{origin}:{line}: {c} = {row[col[c]]} requests of bytes_per_request = {each_text} "
                                   f"exceed budget_bytes = {budget_text} (allowed: requests x bytes_per_request <= "
                                   f"budget_bytes)")
        key = tuple(row[col[c]] if c == "experiment" else canonical_axis_value(key_axis_value(c, row[col[c]]))
                    for c in s.key if c in col)
        if key in first_line:
            label = ",".join(f"{c}={row[col[c]]}" for c in s.key if c in col and c != "experiment" and row[col[c]])
            raise CsvError(f"{origin}:{line}: point {label} is listed twice (first on line {first_line[key]}; "
                           f"allowed: one row per point)")
        first_line[key] = line
        gpu = row[col["gpu"]] if "gpu" in col else ""
        if gpu:
            if not first_gpu:
                first_gpu, gpu_line = gpu, line
            elif gpu != first_gpu:
                raise CsvError(f"{origin}:{line}: gpu '{gpu}' differs from '{first_gpu}' on line {gpu_line} (allowed: "
                               f"one GPU per file)")
    for a in axis_rules().get(s.kind, ()):
        if a.axis not in col:  # a CSV written before the kind gained the axis
            continue
        for row, line in zip(rows, lines):
            value = row[col[a.axis]]
            # A sweep writes an axis's value where the axis matters for the row's variant (the variant always), and
            # leaves it empty elsewhere. (A CSV written before the kind gained an axis lacks its column.)
            if a.axis == "variant" and not value:
                raise CsvError(f"{origin}:{line}: variant is empty (allowed: {a.allowed})")
            if a.axis != "variant" and "variant" in col:
                variant = row[col["variant"]]
                applies = variant in a.applies_to
                if not applies and value:
                    raise CsvError(f"{origin}:{line}: {a.axis} = '{shown_value(value)}' on a {variant} row (allowed: "
                                   f"empty; {a.axis} does not apply to {variant})")
                if applies and not value:
                    raise CsvError(f"{origin}:{line}: {a.axis} is empty on a {variant} row (allowed: {a.allowed})")
            if value and (reason := axis_refusal(a, value)):
                raise CsvError(f"{origin}:{line}: {reason}")
    return s


def read(path, kind: str | None = None) -> list[dict[str, str]]:
    """Every row of the result CSV at `path` as a dict, its axis values in their one spelling (canonical_axis_value),
    after the checks of `parse` and `validate`; with `kind`, the
    file must be a CSV of that kind. Raises CsvError naming the file (and line) when its path is too long for the file
    system (the path shortened, shown_value), or it is missing, under a folder this user cannot search
    (unsearchable_folder), unreadable, malformed or breaks a rule."""
    p = Path(path)
    problem = path_too_long(p)
    if problem:
        raise CsvError(f"{shown_value(str(path))}: {problem}")
    unsearchable = unsearchable_folder(p)
    if unsearchable:
        folder, error = unsearchable
        raise CsvError(f"{path}: '{folder}' cannot be searched: {error.strerror or error} (allowed: a result CSV of "
                       "kvb, reached through folders this user can search)")
    if not p.exists():
        raise CsvError(f"{path}: no such file (allowed: a result CSV of kvb)")
    if p.is_dir():
        raise CsvError(f"{path}: is a directory (allowed: a result CSV of kvb)")
    if not p.is_file():
        raise CsvError(f"{path}: not a regular file (allowed: a result CSV of kvb)")
    try:
        # Bytes that are not UTF-8 are kept (as U+DC80 to U+DCFF) so that validate refuses them naming their line and
        # column, as kvb does, once the file has parsed.
        text = p.read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as e:
        raise CsvError(f"{path}: unreadable: {e.strerror or e} (allowed: a result CSV of kvb that this user can read)"
                       ) from None
    header, rows, lines = parse(text, path)
    schema = validate(header, rows, lines, path)
    if kind is not None and schema.kind != kind:
        raise CsvError(f"{path}: a {schema.kind} CSV (allowed: a {kind} CSV)")
    out = [dict(zip(header, r)) for r in rows]
    for row in out:  # each axis value in its one spelling (accepted 0.70 as 0.7), as the figures compare them
        for c in schema.key:
            if c != "experiment" and c in row:
                row[c] = canonical_axis_value(row[c])
    return out
