// Duration flags: every command reads a duration the same way, through parse_duration (base/duration.hpp)
// ("500ms", "30s", "2m"; a bare number is refused with a hint). The check runs while CLI11 parses,
// so a bad value is reported as "--flag: 'text': why, e.g. ..." before anything starts.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <stdexcept>
#include <string>

#include "base/duration.hpp"

namespace retrace::cli {

// Accepts a duration of at least `minimum`; the value is left as typed.
inline CLI::Validator duration_check(std::chrono::milliseconds minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        try {
          auto value = parse_duration(text, "");
          if (value < minimum)
            return "'" + text + "': must be at least " + format_duration(minimum);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      "");
}

// A duration option (e.g. "--drain-timeout") stored in milliseconds; `value` holds the default.
inline CLI::Option* add_duration_option(CLI::App& command, const std::string& names,
                                        std::chrono::milliseconds& value, const std::string& help,
                                        std::chrono::milliseconds minimum = {}) {
  auto* option = command.add_option_function<std::string>(
      names,
      [&value](const std::string& text) {
        value = std::chrono::duration_cast<std::chrono::milliseconds>(parse_duration(text, ""));
      },
      help);
  return option->check(duration_check(minimum))->type_name("DURATION");
}

// A flag that was renamed: hidden from --help, and refused with the name to use instead.
inline void add_renamed_option(CLI::App& command, const std::string& old_name,
                               const std::string& instead) {
  command
      .add_option_function<std::string>(
          old_name,
          [old_name, instead](const std::string&) {
            throw CLI::ValidationError(old_name + " was renamed; use " + instead);
          })
      ->group("");
}

}  // namespace retrace::cli
