// The Python module `retrace`: traces, diffs and sweep summaries as pandas DataFrames, read by the
// same C++ the commands run (docs/python.md). The top floor: it binds, it computes nothing of its
// own. Errors are Python exceptions carrying the message the command line prints: a trace that
// cannot be read raises retrace.TraceError, a path that does not exist FileNotFoundError.
#include <pybind11/stl.h>

#include <fstream>
#include <sstream>

#include "llm/derive_tokens.hpp"
#include "python/diff_table.hpp"
#include "python/audit_reader.hpp"
#include "python/tables.hpp"

namespace retrace::python {

using namespace pybind11::literals;

namespace {

// The words CLI11's ExistingPath check prints for the commands' trace arguments.
[[noreturn]] void missing(const std::filesystem::path& path) {
  PyErr_SetString(PyExc_FileNotFoundError, ("Path does not exist: " + path.string()).c_str());
  throw py::error_already_set();
}

std::filesystem::path existing(const std::string& text) {
  std::filesystem::path path(text);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) missing(path);
  return path;
}

py::object json_or_text(const std::string& text) {
  if (text.empty()) return py::none();
  try {
    return py::module_::import("json").attr("loads")(text);
  } catch (const py::error_already_set&) {
    return py::str(text);
  }
}

py::dict header_dict(const TraceHeader& header) {
  py::dict labels;
  for (const auto& label : header.labels) labels[py::str(label.key)] = label.value;
  // The names `retrace export` gives the header's fields.
  return py::dict("format_major"_a = header.format_major, "format_minor"_a = header.format_minor,
                  "tool_version"_a = header.tool_version, "created_unix_ns"_a = header.created_unix_ns,
                  "source"_a = std::string(to_string(header.source)), "target"_a = header.target,
                  "settings"_a = json_or_text(header.settings), "host"_a = header.host, "labels"_a = labels,
                  "server_info"_a = json_or_text(header.server_info));
}

// A trace opened once to read (and so check) its header; each table reads it again from the start.
class Trace {
 public:
  explicit Trace(const std::string& path) : path_(existing(path)) {
    TraceReader reader(path_);
    header_ = header_dict(reader.header());
  }
  const py::dict& header() const { return header_; }
  std::string path() const { return path_.string(); }
  template <class Build>
  py::object table(Build build) const {
    Warnings warnings;
    py::object frame = build(warnings);
    warnings.emit();
    return frame;
  }
  py::object exchanges() const {
    return table([&](Warnings& warnings) { return exchanges_table(path_, warnings); });
  }
  py::object chunks(const std::optional<std::vector<std::uint64_t>>& ids) const {
    return table([&](Warnings& warnings) { return chunks_table(path_, ids.value_or(std::vector<std::uint64_t>{}), warnings); });
  }
  py::object metrics() const {
    return table([&](Warnings& warnings) { return metrics_table(path_, warnings); });
  }

 private:
  std::filesystem::path path_;
  py::dict header_;
};

py::tuple diff(const std::string& baseline, const std::string& run, double near_tie, double embedding_tolerance,
               bool expect, const std::string& match) {
  diff::Options options;
  options.near_tie = near_tie;
  options.embedding_tolerance = embedding_tolerance;
  options.expect = expect;
  auto matcher = diff::parse_matcher(match);
  if (!matcher) throw py::value_error("unknown match '" + match + "'; use exact, normalized, contains, regex:RE or json:FIELD");
  options.match = matcher->first;
  options.match_arg = matcher->second;
  return diff_tables(existing(baseline), existing(run), options);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What sweep, study and `sweep --find` write when they finish: summary.json (the figures),
// summary.csv (one row a run or a point), and a study's exchanges.csv (every exchange's sampling
// as sent and cached tokens).
py::dict load_summary(const std::string& text) {
  const std::filesystem::path dir = existing(text);
  const std::filesystem::path json = dir / "summary.json";
  if (!std::filesystem::exists(json)) {
    PyErr_SetString(PyExc_FileNotFoundError,
                    (dir.string() + " has no summary.json: not a sweep, study or search directory, or one "
                                    "that has not finished (resume it with --resume)")
                        .c_str());
    throw py::error_already_set();
  }
  py::module_ pandas = py::module_::import("pandas");
  py::dict loaded("summary"_a = py::module_::import("json").attr("loads")(read_text(json)));
  for (auto [key, file] : {std::pair{"table", "summary.csv"}, std::pair{"exchanges", "exchanges.csv"}}) {
    const auto path = dir / file;
    loaded[key] = std::filesystem::exists(path) ? pandas.attr("read_csv")(path.string()) : py::none();
  }
  return loaded;
}

}  // namespace

}  // namespace retrace::python

PYBIND11_MODULE(retrace, module) {
  namespace py = pybind11;
  using namespace pybind11::literals;
  using retrace::python::Trace;
  module.doc() = "retrace traces, diffs and summaries as pandas DataFrames (docs/python.md)";
  retrace::llm::install_token_deriver();  // format 1.7's derived tokens (format/token_deriver.hpp)
  static py::exception<retrace::TraceError> trace_error(module, "TraceError");
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const retrace::TraceError& e) {
      trace_error(e.what());
    }
  });
  py::class_<Trace>(module, "Trace", "A trace file or a directory of segments, read by retrace's own reader")
      .def_property_readonly("header", &Trace::header, "The trace's header as a dict")
      .def_property_readonly("path", &Trace::path)
      .def("exchanges", &Trace::exchanges, "One row per exchange: a pandas DataFrame")
      .def("chunks", &Trace::chunks, "ids"_a = py::none(),
           "One row per output token (of the exchanges whose ids are given, or all)")
      .def("metrics", &Trace::metrics, "The target's /metrics as the run scraped it, one row per value")
      .def("__repr__", [](const Trace& trace) { return "retrace.Trace('" + trace.path() + "')"; });
  module.def("open", [](const std::string& path) { return Trace(path); }, "path"_a,
             "Open a trace (.rtrace) or a directory of segments");
  module.def("diff", &retrace::python::diff, "baseline"_a, "run"_a, "near_tie"_a = retrace::diff::kDefaultNearTieMargin,
             "embedding_tolerance"_a = 0.0, "expect"_a = false, "match"_a = "exact",
             "Compare a run with a baseline as `retrace diff` does: (pairs DataFrame, summary dict)");
  module.def("load_summary", &retrace::python::load_summary, "dir"_a,
             "A sweep, study or search directory's summary: dict of summary (dict), table and exchanges "
             "(DataFrames)");
  // For tests/python/test_audit_reader.py: a body's sampling as exchanges() makes it numbers
  // (temperature, top_p, top_k, seed, n), and as the audit's JSON text of it reads back.
  auto as_tuple = [](const retrace::python::SamplingAsSent& s) {
    return py::make_tuple(s.temperature, s.top_p, s.top_k, s.seed, s.n);
  };
  module.def("_sampling_as_sent", [as_tuple](std::string_view body) {
    return as_tuple(retrace::python::sampling_as_sent(retrace::sweep::AuditReader().sampling(body)));
  });
  module.def("_sampling_audited", [as_tuple](std::string_view body) {
    return as_tuple(retrace::python::audited_sampling(body));
  });
}
