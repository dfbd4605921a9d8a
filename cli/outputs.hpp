// No silent overwrites: the one rule every command that writes a file or a directory follows.
// An output that is one of the command's own inputs (the same file by identity: a hard link or
// another spelling of the path counts) is always refused; an existing output is refused unless
// --force was given.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace retrace::cli {

// Adds --force (help text names what it allows) and returns it.
CLI::Option* add_force_flag(CLI::App& command, bool& force, const std::string& what);

// Throws std::invalid_argument "FLAG PATH: ..." when `out` is one of `inputs`, or exists and
// `force` is false. `flag` names the option, e.g. "--out".
void check_output_file(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs,
                       bool force, std::string_view flag);

// For an output directory: refused when it exists and is not empty, unless `force`. The files the
// command will write into it are checked against its inputs with check_output_file(..., true, ...).
void check_output_dir(const std::filesystem::path& dir, bool force, std::string_view flag);

}  // namespace retrace::cli
