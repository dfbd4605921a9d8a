// Columns built in C++ and handed to NumPy and pandas whole: each column is filled in a plain
// C++ vector as the trace is read (no Python object per row), then moved into a NumPy array that
// owns it (no copy), and the table is one pandas DataFrame of them. Numbers are float64 (NaN when
// absent) or integers; an integer that may be absent is pandas' nullable Int64 (values and a
// mask); a text of few distinct values (endpoint, error kind, part, ...) is a pandas Categorical
// (int32 codes and the distinct values once); a text of many (request key, token text) is an
// object column, one Python str a row, made once at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace retrace::python {

namespace py = pybind11;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A column of T (a number or bool, kept as uint8), moved into a NumPy array at the end.
template <class T>
struct NumberColumn {
  std::vector<T> values;
  void reserve(std::size_t n) { values.reserve(n); }
  void push(T value) { values.push_back(value); }
};

// An integer that may be absent: pandas' Int64 (values, and a mask true where absent).
struct NullableColumn {
  std::vector<std::int64_t> values;
  std::vector<std::uint8_t> absent;
  void reserve(std::size_t n) { values.reserve(n), absent.reserve(n); }
  void push(std::optional<std::int64_t> value) {
    values.push_back(value.value_or(0));
    absent.push_back(!value);
  }
};

// Few distinct texts: each row a code into `categories` (-1: absent). Looked up by the text's view
// (no string made a row).
struct CategoryColumn {
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>()(text); }
  };
  std::vector<std::int32_t> codes;
  std::vector<std::string> categories;
  std::unordered_map<std::string, std::int32_t, Hash, std::equal_to<>> index;
  std::int32_t last = -1;  // the previous row's code: rows in a run of one value skip the lookup
  void reserve(std::size_t n) { codes.reserve(n); }
  void push(std::string_view text);
  void push_absent() { codes.push_back(-1); }
};

// Texts named by a 128-bit key (request keys): an object column as TextColumn's, but a key seen
// among the recent ones shares their Python str (a replay repeats a few hundred keys a million
// times: one str each, not one a row). The recent keys are a direct-mapped table of fixed size,
// so a trace of all-distinct keys costs one probe a row and no map of them all.
struct KeyTextColumn {
  static constexpr std::size_t kRecent = 4096;
  std::vector<std::uint32_t> codes;                           // each row's index into `keys`
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keys;  // the keys given a str
  std::vector<std::uint32_t> recent = std::vector<std::uint32_t>(kRecent, UINT32_MAX);
  void push(std::uint64_t hi, std::uint64_t lo) {
    const std::size_t slot = (hi ^ (lo * 0x9e3779b97f4a7c15ULL)) % kRecent;
    std::uint32_t code = recent[slot];
    if (code == UINT32_MAX || keys[code] != std::pair(hi, lo)) {
      code = static_cast<std::uint32_t>(keys.size());
      keys.emplace_back(hi, lo);
      recent[slot] = code;
    }
    codes.push_back(code);
  }
};

// Many distinct texts: one Python str a row, made at the end (bytes that are not UTF-8 are
// replaced with U+FFFD). Absent rows are None.
struct TextColumn {
  std::string bytes;                 // every row's text, one after another
  std::vector<std::uint64_t> ends;   // where each row's ends in `bytes`
  std::vector<std::uint8_t> absent;
  void reserve(std::size_t n) { ends.reserve(n), absent.reserve(n); }
  void push(std::string_view text) {
    bytes.append(text);
    ends.push_back(bytes.size());
    absent.push_back(0);
  }
  void push_absent() {
    ends.push_back(bytes.size());
    absent.push_back(1);
  }
};

py::array to_numpy(std::vector<double>&& values);
py::array to_numpy(std::vector<float>&& values);
py::array to_numpy(std::vector<std::int64_t>&& values);
py::array to_numpy(std::vector<std::uint64_t>&& values);
py::array to_numpy(std::vector<std::int32_t>&& values);
py::array to_numpy(std::vector<std::uint32_t>&& values);
py::array to_bool_numpy(std::vector<std::uint8_t>&& values);

// The columns of one table in order, and the DataFrame made of them.
class Table {
 public:
  void add(std::string name, std::vector<double>&& values) { add_array(std::move(name), to_numpy(std::move(values))); }
  void add(std::string name, std::vector<float>&& values) { add_array(std::move(name), to_numpy(std::move(values))); }
  void add(std::string name, std::vector<std::int64_t>&& values) { add_array(std::move(name), to_numpy(std::move(values))); }
  void add(std::string name, std::vector<std::uint64_t>&& values) { add_array(std::move(name), to_numpy(std::move(values))); }
  void add(std::string name, std::vector<std::int32_t>&& values) { add_array(std::move(name), to_numpy(std::move(values))); }
  void add(std::string name, std::vector<std::uint32_t>&& values) { add_array(std::move(name), to_numpy(std::move(values))); }
  void add_bool(std::string name, std::vector<std::uint8_t>&& values) { add_array(std::move(name), to_bool_numpy(std::move(values))); }
  void add(std::string name, NullableColumn&& column);
  void add(std::string name, CategoryColumn&& column);
  void add(std::string name, TextColumn&& column);
  // `text_of(hi, lo)`: a key's text (made once a str).
  void add(std::string name, KeyTextColumn&& column, std::string (*text_of)(std::uint64_t, std::uint64_t));
  // Nanoseconds since the epoch as pandas datetime64[ns] (UTC), 0 as NaT.
  void add_time(std::string name, std::vector<std::int64_t>&& unix_ns);
  void add_array(std::string name, py::object array);
  py::object frame() const;

 private:
  std::vector<std::pair<std::string, py::object>> columns_;
};

}  // namespace retrace::python
