// `retrace help TOPIC`: the task guides in docs/, one topic each, named apart from the commands
// (`help diff` explains the command, `help comparing` names its guide). The table is the one list
// of topics: `help topics`, the man page's GUIDES section and tests/e2e/help_topics.sh read it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace retrace::cli {

struct HelpTopic {
  std::string_view name;      // what `retrace help NAME` takes
  std::string_view guide;     // its file under docs/
  std::string_view title;     // the guide's title
  std::string_view summary;   // what it covers, one line
  std::string_view commands;  // the commands it is about, for `retrace help COMMAND`
};

const std::vector<HelpTopic>& help_topics();

// The topic named NAME, or nullptr.
const HelpTopic* find_help_topic(std::string_view name);

// What `retrace help TOPIC` prints: the title, the summary, where the guide is on this machine
// (installed beside the binary, or in the source tree it was built from), its commands.
std::string help_topic_text(const HelpTopic& topic);

// What `retrace help topics` prints: every topic, its title and summary.
std::string help_topics_list();

}  // namespace retrace::cli
