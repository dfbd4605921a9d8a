// Test helpers: the encoders matching net/content_coding's decoders, to make coded bodies.
#pragma once

#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace retrace::test {

// zlib's deflate with `window_bits`: 15 + 16 gzip, 15 zlib, -15 raw deflate. Each piece is
// flushed (Z_SYNC_FLUSH) as nginx's gzip filter flushes each piece of a proxied stream, and the
// coded bytes of each come back as one piece; the last piece ends the stream.
inline std::vector<std::string> zlib_encode_pieces(const std::vector<std::string>& pieces,
                                                   int window_bits) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::vector<std::string> coded;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto& plain = pieces[i];
    std::string out(deflateBound(&zs, plain.size()) + 64, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
    zs.avail_in = static_cast<uInt>(plain.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    bool last = i + 1 == pieces.size();
    int status = deflate(&zs, last ? Z_FINISH : Z_SYNC_FLUSH);
    if (status != (last ? Z_STREAM_END : Z_OK)) throw std::runtime_error("deflate");
    out.resize(out.size() - zs.avail_out);
    coded.push_back(std::move(out));
  }
  deflateEnd(&zs);
  return coded;
}

inline std::string zlib_encode(std::string_view plain, int window_bits) {
  std::string out;
  for (const auto& piece : zlib_encode_pieces({std::string(plain)}, window_bits)) out += piece;
  return out;
}
inline std::string gzip(std::string_view plain) { return zlib_encode(plain, 15 + 16); }

inline std::string brotli(std::string_view plain) {
  std::string out(BrotliEncoderMaxCompressedSize(plain.size()) + 64, '\0');
  std::size_t size = out.size();
  if (!BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, plain.size(),
                             reinterpret_cast<const std::uint8_t*>(plain.data()), &size,
                             reinterpret_cast<std::uint8_t*>(out.data())))
    throw std::runtime_error("BrotliEncoderCompress");
  out.resize(size);
  return out;
}

inline std::string zstd(std::string_view plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  auto size = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 3);
  if (ZSTD_isError(size)) throw std::runtime_error("ZSTD_compress");
  out.resize(size);
  return out;
}

}  // namespace retrace::test
