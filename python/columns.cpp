#include "python/columns.hpp"

#include <memory>

namespace retrace::python {

using namespace pybind11::literals;

namespace {

// A NumPy array over the vector's storage, owning it (freed when the array is).
template <class T>
py::array owned(std::vector<T>&& values, py::dtype dtype) {
  auto* held = new std::vector<T>(std::move(values));
  py::capsule owner(held, [](void* pointer) { delete static_cast<std::vector<T>*>(pointer); });
  std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(held->size())};
  std::vector<py::ssize_t> strides{static_cast<py::ssize_t>(sizeof(T))};
  return py::array(std::move(dtype), std::move(shape), std::move(strides), held->data(), owner);
}

py::module_ pandas() { return py::module_::import("pandas"); }

}  // namespace

void CategoryColumn::push(std::string_view text) {
  if (last >= 0 && categories[static_cast<std::size_t>(last)] == text) {
    codes.push_back(last);
    return;
  }
  auto at = index.find(text);
  if (at == index.end()) {
    at = index.emplace(std::string(text), static_cast<std::int32_t>(categories.size())).first;
    categories.emplace_back(text);
  }
  codes.push_back(last = at->second);
}

py::array to_numpy(std::vector<double>&& values) { return owned(std::move(values), py::dtype::of<double>()); }
py::array to_numpy(std::vector<float>&& values) { return owned(std::move(values), py::dtype::of<float>()); }
py::array to_numpy(std::vector<std::int64_t>&& values) { return owned(std::move(values), py::dtype::of<std::int64_t>()); }
py::array to_numpy(std::vector<std::uint64_t>&& values) { return owned(std::move(values), py::dtype::of<std::uint64_t>()); }
py::array to_numpy(std::vector<std::int32_t>&& values) { return owned(std::move(values), py::dtype::of<std::int32_t>()); }
py::array to_numpy(std::vector<std::uint32_t>&& values) { return owned(std::move(values), py::dtype::of<std::uint32_t>()); }
py::array to_bool_numpy(std::vector<std::uint8_t>&& values) { return owned(std::move(values), py::dtype("bool")); }

void Table::add_array(std::string name, py::object array) { columns_.emplace_back(std::move(name), std::move(array)); }

void Table::add(std::string name, NullableColumn&& column) {
  py::object values = to_numpy(std::move(column.values));
  py::object mask = to_bool_numpy(std::move(column.absent));
  add_array(std::move(name), pandas().attr("arrays").attr("IntegerArray")(values, mask));
}

void Table::add(std::string name, CategoryColumn&& column) {
  py::list categories(column.categories.size());
  for (std::size_t i = 0; i < column.categories.size(); ++i)
    categories[i] = py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(column.categories[i].data(), static_cast<py::ssize_t>(column.categories[i].size()), "replace"));
  py::object codes = to_numpy(std::move(column.codes));
  add_array(std::move(name), pandas().attr("Categorical").attr("from_codes")(codes, categories));
}

void Table::add(std::string name, TextColumn&& column) {
  const std::size_t rows = column.ends.size();
  py::array array = py::module_::import("numpy").attr("empty")(rows, "dtype"_a = "object");
  auto** cells = static_cast<PyObject**>(array.mutable_data());
  std::uint64_t begin = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint64_t end = column.ends[i];
    PyObject* cell = nullptr;
    if (column.absent[i]) {
      cell = Py_None;
      Py_INCREF(cell);
    } else {
      cell = PyUnicode_DecodeUTF8(column.bytes.data() + begin, static_cast<py::ssize_t>(end - begin), "replace");
      if (!cell) throw py::error_already_set();
    }
    Py_XDECREF(cells[i]);  // numpy.empty's object arrays hold None
    cells[i] = cell;
    begin = end;
  }
  std::string().swap(column.bytes);
  add_array(std::move(name), std::move(array));
}

void Table::add(std::string name, KeyTextColumn&& column, std::string (*text_of)(std::uint64_t, std::uint64_t)) {
  std::vector<py::object> texts(column.keys.size());
  py::array array = py::module_::import("numpy").attr("empty")(column.codes.size(), "dtype"_a = "object");
  auto** cells = static_cast<PyObject**>(array.mutable_data());
  for (std::size_t i = 0; i < column.codes.size(); ++i) {
    py::object& text = texts[column.codes[i]];
    if (!text) {
      const auto& [hi, lo] = column.keys[column.codes[i]];
      std::string bytes = text_of(hi, lo);
      text = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(bytes.data(), static_cast<py::ssize_t>(bytes.size()), "replace"));
      if (!text) throw py::error_already_set();
    }
    Py_XDECREF(cells[i]);  // numpy.empty's object arrays hold None
    cells[i] = text.inc_ref().ptr();
  }
  add_array(std::move(name), std::move(array));
}

void Table::add_time(std::string name, std::vector<std::int64_t>&& unix_ns) {
  constexpr std::int64_t kNaT = std::numeric_limits<std::int64_t>::min();
  for (auto& value : unix_ns)
    if (value == 0) value = kNaT;
  py::object array = owned(std::move(unix_ns), py::dtype("datetime64[ns]"));
  add_array(std::move(name), pandas().attr("DatetimeIndex")(array).attr("tz_localize")("UTC"));
}

py::object Table::frame() const {
  py::dict columns;
  for (const auto& [name, array] : columns_) columns[py::str(name)] = array;
  return pandas().attr("DataFrame")(columns, "copy"_a = false);
}

}  // namespace retrace::python
