#include "python/tables.hpp"

namespace retrace::python {

void Warnings::add(const std::filesystem::path& path, const Recovery& recovery) {
  if (!recovery.clean()) lines.push_back(path.string() + ": " + describe(recovery));
}

void Warnings::emit() const {
  for (const auto& line : lines)
    if (PyErr_WarnEx(PyExc_RuntimeWarning, line.c_str(), 2) != 0) throw py::error_already_set();
}

}  // namespace retrace::python
