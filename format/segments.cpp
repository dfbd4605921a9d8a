#include "format/segments.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <system_error>

#include "format/trace.hpp"

namespace retrace {

namespace {
constexpr std::string_view kSuffix = ".rtrace";
}

std::string segment_file_name(std::uint64_t number) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06llu", static_cast<unsigned long long>(number));
  return std::string(digits) + std::string(kSuffix);
}

std::optional<std::uint64_t> segment_number(std::string_view file_name) {
  if (file_name.size() <= kSuffix.size() || !file_name.ends_with(kSuffix)) return std::nullopt;
  auto digits = file_name.substr(0, file_name.size() - kSuffix.size());
  if (digits.size() < 6 || digits.size() > 19) return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::uint64_t number = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), number);
  // One name per number: "0000001.rtrace" is not segment 1 (whose name is "000001.rtrace").
  if (number == 0 || segment_file_name(number) != file_name) return std::nullopt;
  return number;
}

SegmentListing list_segments(const std::filesystem::path& directory) {
  namespace fs = std::filesystem;
  SegmentListing listing;
  std::error_code error;
  fs::directory_iterator entries(directory, error), end;
  if (error)
    throw TraceError("cannot read the segment directory " + directory.string() + ": " + error.message());
  std::uint64_t seen = 0;
  for (; entries != end; entries.increment(error)) {
    if (error)
      throw TraceError("cannot read the segment directory " + directory.string() + ": " + error.message());
    if (++seen > kMaxSegmentDirectoryEntries)
      throw TraceError(directory.string() + " holds more than " +
                       std::to_string(kMaxSegmentDirectoryEntries) +
                       " entries; a segment set holds fewer (use a larger --rotate-size or "
                       "--rotate-every, or retention)");
    auto name = entries->path().filename().string();
    auto number = segment_number(name);
    if (number && entries->is_regular_file(error)) {
      listing.numbers.push_back(*number);
    } else {
      if (listing.other_entries++ == 0) listing.first_other = name;
    }
  }
  std::sort(listing.numbers.begin(), listing.numbers.end());
  return listing;
}

bool is_segment_set(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return false;
  try {
    return !list_segments(path).numbers.empty();
  } catch (const TraceError&) {
    return false;
  }
}

}  // namespace retrace
