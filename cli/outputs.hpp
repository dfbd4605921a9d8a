// The rules every command's outputs follow. No silent overwrites: an output that is one of the
// command's own inputs (the same file by identity: a hard link or another spelling of the path
// counts) is always refused; an existing output is refused unless --force was given. Stdout,
// checked: what a command prints goes through std::cout, whose writes are counted and whose first
// error is kept; a failed write (a full disk: `> /dev/full`) exits 2 saying how many bytes got
// out, as a file output's does; a closed pipe (`| head`, EPIPE) ends the output quietly.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace retrace::cli {

// Makes std::cout the checked stdout (main(), before any command runs). Writes after a failure
// are dropped and leave std::cout bad, so a long loop can stop at `!std::cout`.
void check_stdout();
// Flushes stdout: `exit_code` when every byte got out or the reader closed the pipe; else 2,
// after saying on stderr what failed and after how many bytes.
int finish_stdout(int exit_code);

// --derive-tokens (record, and replay with the commands that share its flags): the trace written
// with format 1.7's derived tokens (format/token_deriver.hpp; bench/RESULTS.md, issue 44 items 1
// and 5).
inline constexpr const char* kDeriveTokensHelp =
    "Store streamed tokens as derived from their events (format 1.7): traces ~40 % smaller, "
    "13-20 % less CPU to write; reading them costs 1.1-2.2x CPU";

// Adds --force (help text names what it allows) and returns it.
CLI::Option* add_force_flag(CLI::App& command, bool& force, const std::string& what);

// --keep-secrets (record, shadow): secret headers, query parameters and body fields written to the
// trace verbatim instead of redacted (format/redaction.hpp's Redactor); off by default.
CLI::Option* add_keep_secrets_flag(CLI::App& command, bool& keep_secrets);
// The warning a run with --keep-secrets prints on stderr before it starts: `command` names it
// ("record"), `where` is its --out.
void warn_keep_secrets(std::string_view command, const std::string& where);

// Throws std::invalid_argument "FLAG PATH: ..." when `out` is one of `inputs`, or exists and
// `force` is false. `flag` names the option, e.g. "--out".
void check_output_file(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs,
                       bool force, std::string_view flag);

// For an output directory: refused when it exists and is not empty, unless `force`. The files the
// command will write into it are checked against its inputs with check_output_file(..., true, ...).
void check_output_dir(const std::filesystem::path& dir, bool force, std::string_view flag);

}  // namespace retrace::cli
