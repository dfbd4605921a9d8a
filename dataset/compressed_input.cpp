#include "dataset/compressed_input.hpp"

#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "format/trace.hpp"

namespace retrace {

namespace {
constexpr std::size_t kChunk = 1 << 16;
}  // namespace

std::string_view to_string(Compression compression) {
  switch (compression) {
    case Compression::gzip: return "gzip";
    case Compression::zstd: return "zstd";
    default: return "none";
  }
}

struct CompressedInput::Impl {
  std::filesystem::path path;
  std::ifstream file;
  Compression compression = Compression::none;
  std::vector<char> in = std::vector<char>(kChunk);
  std::size_t in_begin = 0, in_end = 0;
  bool file_done = false;
  z_stream gzip{};
  bool gzip_open = false;
  ZSTD_DStream* zstd = nullptr;
  bool frame_open = false;  // inside a compressed frame/member that has not ended yet
  std::vector<char> out = std::vector<char>(kChunk);
  std::size_t out_begin = 0, out_end = 0;

  ~Impl() {
    if (gzip_open) inflateEnd(&gzip);
    if (zstd) ZSTD_freeDStream(zstd);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(path.string() + ": " + what);
  }

  // Refills `in` when it is empty; false when the file has no more bytes.
  bool fill_input() {
    if (in_begin < in_end) return true;
    if (file_done) return false;
    file.read(in.data(), static_cast<std::streamsize>(in.size()));
    if (file.bad()) fail(std::string("cannot read: ") + std::strerror(errno));
    in_begin = 0;
    in_end = static_cast<std::size_t>(file.gcount());
    if (in_end == 0) file_done = true;
    return in_end > 0;
  }

  // Decompresses (or copies) the next bytes into `out`; false at the end of the input.
  bool fill_output() {
    out_begin = out_end = 0;
    while (out_end == 0) {
      if (!fill_input()) {
        if (frame_open)
          fail(std::string("the ") + std::string(to_string(compression)) +
               " stream ends early (the file is cut short); the lines before the cut can be "
               "recovered with `" + (compression == Compression::gzip ? "zcat" : "zstdcat") +
               " " + path.string() + " > part`");
        return false;
      }
      if (compression == Compression::none) {
        std::size_t n = in_end - in_begin;
        std::memcpy(out.data(), in.data() + in_begin, n);
        in_begin = in_end;
        out_end = n;
      } else if (compression == Compression::gzip) {
        inflate_some();
      } else {
        decompress_zstd_some();
      }
    }
    return true;
  }

  void inflate_some() {
    if (!frame_open) {
      if (gzip_open) inflateReset(&gzip);
      frame_open = true;
    }
    gzip.next_in = reinterpret_cast<Bytef*>(in.data() + in_begin);
    gzip.avail_in = static_cast<uInt>(in_end - in_begin);
    gzip.next_out = reinterpret_cast<Bytef*>(out.data());
    gzip.avail_out = static_cast<uInt>(out.size());
    int status = inflate(&gzip, Z_NO_FLUSH);
    in_begin = in_end - gzip.avail_in;
    out_end = out.size() - gzip.avail_out;
    if (status == Z_STREAM_END) frame_open = false;  // another member may follow
    else if (status != Z_OK && status != Z_BUF_ERROR)
      fail(std::string("corrupt gzip data (") + (gzip.msg ? gzip.msg : "zlib error " +
           std::to_string(status)) + "); check the file with `gzip -t`");
  }

  void decompress_zstd_some() {
    ZSTD_inBuffer input{in.data() + in_begin, in_end - in_begin, 0};
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    std::size_t hint = ZSTD_decompressStream(zstd, &output, &input);
    if (ZSTD_isError(hint))
      fail(std::string("corrupt zstd data (") + ZSTD_getErrorName(hint) +
           "); check the file with `zstd -t`");
    in_begin += input.pos;
    out_end = output.pos;
    frame_open = hint != 0;
  }
};

CompressedInput::CompressedInput(const std::filesystem::path& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->file.open(path, std::ios::binary);
  if (!impl_->file)
    throw TraceError("cannot open " + path.string() + ": " + std::strerror(errno));
  impl_->fill_input();
  const auto* bytes = reinterpret_cast<const unsigned char*>(impl_->in.data());
  std::size_t size = impl_->in_end;
  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    impl_->compression = Compression::gzip;
    // 15 + 32: a gzip or zlib header, detected per member.
    if (inflateInit2(&impl_->gzip, 15 + 32) != Z_OK) impl_->fail("cannot start zlib");
    impl_->gzip_open = true;
  } else if (size >= 4 && bytes[0] == 0x28 && bytes[1] == 0xb5 && bytes[2] == 0x2f &&
             bytes[3] == 0xfd) {
    impl_->compression = Compression::zstd;
    impl_->zstd = ZSTD_createDStream();
    if (!impl_->zstd) impl_->fail("cannot start zstd");
  }
}

CompressedInput::~CompressedInput() = default;

Compression CompressedInput::compression() const { return impl_->compression; }
const std::filesystem::path& CompressedInput::path() const { return impl_->path; }

std::size_t CompressedInput::read(char* out, std::size_t size) {
  auto& impl = *impl_;
  if (impl.out_begin == impl.out_end && !impl.fill_output()) return 0;
  std::size_t n = std::min(size, impl.out_end - impl.out_begin);
  std::memcpy(out, impl.out.data() + impl.out_begin, n);
  impl.out_begin += n;
  return n;
}

bool CompressedInput::next_line(std::string& line) {
  auto& impl = *impl_;
  line.clear();
  bool any = false;
  for (;;) {
    if (impl.out_begin == impl.out_end && !impl.fill_output()) break;
    any = true;
    const char* begin = impl.out.data() + impl.out_begin;
    std::size_t available = impl.out_end - impl.out_begin;
    const void* newline = std::memchr(begin, '\n', available);
    std::size_t piece = newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - begin) : available;
    if (line.size() + piece > kMaxLineBytes)
      impl.fail("line " + std::to_string(line_number_ + 1) + " is longer than " +
                std::to_string(kMaxLineBytes) +
                " bytes, the longest line read (a trace record holds no more); is it one JSON "
                "document on one line? Split it into one row per line");
    line.append(begin, piece);
    if (newline) {
      impl.out_begin += piece + 1;
      break;
    }
    impl.out_begin = impl.out_end;
  }
  if (!any) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

}  // namespace retrace
