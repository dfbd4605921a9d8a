// The guides' topics and where their files are found.
#include "cli/help_topics.hpp"

#include <filesystem>
#include <sstream>
#include <system_error>

namespace retrace::cli {

const std::vector<HelpTopic>& help_topics() {
  static const std::vector<HelpTopic> topics = {
      {"recording", "recording.md", "Recording production traffic",
       "the proxy, segments and retention, sampling, probes, secrets, a Kubernetes sidecar", "record inspect"},
      {"replaying", "replaying.md", "Replaying",
       "concurrency, rate, recorded timing, public traces, windows, sessions, the server's metrics", "replay import stats"},
      {"comparing", "diff.md", "What diff compares",
       "endpoints and parts, first divergent tokens, near-ties, gold answers, pairing", "diff report cat"},
      {"repeatability", "study.md", "The repeatability study",
       "a study and its scope, the price of repeatability, sweeps, bisect, a real engine", "study sweep bisect report"},
      {"capacity", "capacity.md", "Capacity search",
       "the largest load that meets the SLOs with the answers unchanged (sweep --find)", "sweep"},
      {"shadowing", "shadow.md", "Shadowing", "a candidate deployment answering production's requests, live",
       "shadow"},
      {"scale-out", "scale-out.md", "Beyond one machine",
       "one client's reach, memory, sharded replay by hand, on Slurm and on Kubernetes", "replay merge"},
      {"server-state", "server-state.md", "Server state", "what the server was doing when each request ran",
       "replay export diff"},
      {"python", "python.md", "Python", "traces, chunks and diffs as pandas DataFrames: import retrace", ""},
      {"trace-format", "trace-format.md", "The trace format",
       "what a .rtrace holds, reading it with zstd and capnp, export and import, recovery", "inspect export import"},
      {"errors", "errors.md", "Errors and exit statuses", "every command's exit statuses, each error and what to do",
       ""},
  };
  return topics;
}

const HelpTopic* find_help_topic(std::string_view name) {
  for (const auto& topic : help_topics())
    if (topic.name == name) return &topic;
  return nullptr;
}

namespace {

// The guide on this machine: installed (PREFIX/bin/retrace beside PREFIX/share/doc/retrace/docs),
// or in the source tree of a build (build/FLAVOUR/retrace); empty when neither holds it.
std::string guide_path(std::string_view guide) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  std::filesystem::path bin = self.parent_path();
  for (const auto& candidate : {bin / "../share/doc/retrace/docs" / guide, bin / "../../docs" / guide}) {
    if (std::filesystem::is_regular_file(candidate, ec))
      return std::filesystem::weakly_canonical(candidate, ec).string();
  }
  return {};
}

}  // namespace

std::string help_topic_text(const HelpTopic& topic) {
  std::ostringstream out;
  out << topic.title << " (retrace help " << topic.name << ")\n  " << topic.summary << "\n\n";
  std::string path = guide_path(topic.guide);
  out << "The guide: docs/" << topic.guide << "\n";
  if (!path.empty())
    out << "  here: " << path << "\n";
  else
    out << "  in retrace's source tree, or installed as share/doc/retrace/docs/" << topic.guide
        << " under the install prefix\n";
  if (!topic.commands.empty()) {
    out << "Commands:";
    std::istringstream words{std::string(topic.commands)};
    for (std::string word; words >> word;) out << " `retrace help " << word << "`";
    out << "\n";
  }
  return out.str();
}

std::string help_topics_list() {
  std::ostringstream out;
  out << "Guides, one a task: `retrace help TOPIC` says where each is (installed, in share/doc/retrace/docs/\n"
         "under the prefix; docs/README.md is the index).\n";
  for (const auto& topic : help_topics()) {
    std::string name(topic.name);
    name.resize(14, ' ');
    out << "  " << name << topic.title << "\n                " << topic.summary << "\n";
  }
  return out.str();
}

}  // namespace retrace::cli
