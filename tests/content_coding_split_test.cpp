// The decoders' one promise to record and replay, which feed a body as it arrives: the same result
// (fed without error, finished, the bytes out) however the body is split. Checked over generated
// zstd, gzip and brotli bodies and their one-byte corruptions, at every split point and one byte a
// time. fuzz_content_coding looks for the same from random bytes; this test is the systematic part
// of it (three findings there were zstd's, each a way libzstd's calls depended on the split).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "net/content_coding.hpp"
#include "tests/encoders.hpp"

using namespace retrace;
using net::ContentDecoder;

namespace {

constexpr std::size_t kLimit = 1 << 20;

struct Outcome {
  bool fed = true;
  bool finished = false;
  std::string out;
  bool operator==(const Outcome& other) const {
    return fed == other.fed && finished == other.finished && (!fed || out == other.out);
  }
};

// `body` fed in the pieces that start at each of `cuts` (ascending, inside the body).
Outcome decode(std::string_view coding, std::string_view body, const std::vector<std::size_t>& cuts) {
  ContentDecoder decoder(coding, kLimit);
  Outcome outcome;
  std::size_t from = 0;
  for (std::size_t i = 0; i <= cuts.size() && outcome.fed; ++i) {
    std::size_t to = i < cuts.size() ? cuts[i] : body.size();
    outcome.fed = decoder.feed(body.substr(from, to - from), outcome.out);
    from = to;
  }
  outcome.finished = outcome.fed && decoder.finish();
  return outcome;
}

// Whole, split in two at every byte, and one byte at a time: all the same.
void check_split_invariant(std::string_view coding, std::string_view body) {
  const Outcome whole = decode(coding, body, {});
  for (std::size_t at = 0; at <= body.size(); ++at) {
    INFO(coding << ", " << body.size() << " bytes, split at " << at);
    REQUIRE(decode(coding, body, {at}) == whole);
  }
  std::vector<std::size_t> every;
  for (std::size_t at = 1; at < body.size(); ++at) every.push_back(at);
  INFO(coding << ", " << body.size() << " bytes, one byte at a time");
  REQUIRE(decode(coding, body, every) == whole);
}

std::string zstd_frame(std::string_view plain, bool checksum, bool content_size, int level) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  std::size_t size = ZSTD_compress2(cctx, out.data(), out.size(), plain.data(), plain.size());
  ZSTD_freeCCtx(cctx);
  REQUIRE_FALSE(ZSTD_isError(size));
  out.resize(size);
  return out;
}

// Plain texts that make each kind of block: RLE (one byte repeated, past one 4 KiB output step),
// raw (bytes that do not compress), compressed (text), and an empty body.
std::vector<std::string> plains() {
  std::string random;
  std::uint32_t state = 2463534242u;
  for (int i = 0; i < 700; ++i) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    random += static_cast<char>(state & 0xff);
  }
  std::string text;
  for (int i = 0; i < 40; ++i) text += "data: {\"text\":\" tok" + std::to_string(i * 31 % 97) + "\"}\n\n";
  return {std::string(9000, '*'), random, text, std::string(), std::string(4096, 'a') + text};
}

}  // namespace

TEST_CASE("zstd bodies decode alike however they are split: frames of every block kind with and without checksums and concatenated") {
  std::vector<std::string> bodies;
  for (const auto& plain : plains())
    for (bool checksum : {false, true})
      for (bool content_size : {false, true}) bodies.push_back(zstd_frame(plain, checksum, content_size, 3));
  // Two frames; a skippable frame between; bytes after a frame that cannot start one.
  const std::string skippable("\x50\x2a\x4d\x18\x03\x00\x00\x00xyz", 11);
  bodies.push_back(bodies[0] + bodies[5]);
  bodies.push_back(bodies[2] + skippable + bodies[9]);
  bodies.push_back(bodies[1] + std::string("\x2a\x2a\x03", 3));
  for (const auto& body : bodies) check_split_invariant("zstd", body);
}

TEST_CASE("one-byte corruptions of a zstd body decode alike however they are split") {
  // Small frames (an RLE block past a 4 KiB output step, raw bytes, text) and each byte of them
  // changed three ways: refused, cut short or decoded, but the same way for every split.
  std::vector<std::string> bodies = {zstd_frame(std::string(9000, '*'), true, true, 3),
                                     zstd_frame(std::string(9000, '*'), false, false, 3),
                                     zstd_frame(plains()[2], false, true, 1)};
  bodies.push_back(bodies[0] + bodies[1]);
  for (const auto& body : bodies) {
    for (std::size_t at = 0; at < body.size(); ++at) {
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        std::string changed = body;
        changed[at] = static_cast<char>(static_cast<unsigned char>(changed[at]) ^ flip);
        INFO("byte " << at << " ^ " << int(flip));
        check_split_invariant("zstd", changed);
      }
    }
  }
}

TEST_CASE("gzip and deflate and brotli bodies and their corruptions decode alike however they are split") {
  const std::string text = plains()[2];
  const std::vector<std::pair<const char*, std::string>> bodies = {
      {"gzip", test::gzip(text) + test::gzip(std::string(9000, '*'))},
      {"deflate", test::zlib_encode(text, 15)},
      {"deflate", test::zlib_encode(text, -15)},
      {"br", test::brotli(text)},
      {"gzip, br", test::brotli(test::gzip(text))},
      {"deflate, zstd", zstd_frame(test::zlib_encode(text, 15), true, true, 3)}};
  for (const auto& [coding, body] : bodies) {
    check_split_invariant(coding, body);
    for (std::size_t at = 0; at < body.size(); at += 7) {
      std::string changed = body;
      changed[at] = static_cast<char>(changed[at] ^ 0x10);
      INFO("byte " << at << " changed");
      check_split_invariant(coding, changed);
    }
  }
}
