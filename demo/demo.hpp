// `retrace demo`: the whole experiment against the built-in simulator (demo/demo.cpp says how).
// demo/ holds demo.cpp only; cli/cmd_demo.cpp wires it to the command line.
#pragma once

#include <atomic>
#include <filesystem>
#include <iosfwd>
#include <string_view>
#include <utility>
#include <vector>

namespace retrace::demo {

struct DemoOptions {
  std::filesystem::path dir;     // empty: a new retrace-demo-YYYYmmdd-HHMMSS under the CWD
  std::filesystem::path traces;  // the folder of the demo's datasets; empty: use `datasets`
  // The datasets compiled into the binary, (file name, bytes); written to <dir>/datasets when
  // `traces` is empty, so the demo needs no file beside the executable.
  std::vector<std::pair<std::string_view, std::string_view>> datasets;
  bool quick = false;            // fewer levels and repeats (the test suite's configuration)
  bool no_stream = false;        // replay without streaming (--no-stream)
  std::filesystem::path self;    // this executable, re-run as `serve` / `record` / `import`
  const std::atomic<bool>* stop = nullptr;
};

// Runs the demo; results to `out`, progress to `log`. Returns the exit code.
int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& log);

}  // namespace retrace::demo
