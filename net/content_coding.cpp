// Content codings: see net/content_coding.hpp. One Stage per coding, each a streaming
// decompressor that appends its output in steps of kStep bytes, so that memory follows what the
// body decodes to and never a guess of it.
#include "net/content_coding.hpp"
#include "net/http_rules.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include <boost/beast/core/string.hpp>

namespace retrace::net {

namespace {

// Output room per step: about four times the input (text compresses 3-10x), within these bounds,
// so that a small piece of a stream does not clear a large buffer.
constexpr std::size_t kMinStep = 4 * 1024;
constexpr std::size_t kStep = 64 * 1024;
constexpr int kZstdWindowLogMax = 23;  // 8 MiB (RFC 9659)
constexpr std::size_t kMaxCodings = 4;

bool decodable(std::string_view coding) {
  return std::any_of(std::begin(kDecodableCodings), std::end(kDecodableCodings),
                     [&](std::string_view known) { return boost::beast::iequals(coding, known); });
}

}  // namespace

std::string decodable_accept_encoding(std::string_view accept_encoding) {
  std::string kept;
  for (auto item : list_items(accept_encoding)) {
    auto coding = trim_ows(item.substr(0, item.find(';')));  // "gzip;q=0.8" → "gzip"
    if (!decodable(coding)) continue;
    if (!kept.empty()) kept += ", ";
    kept += item;
  }
  return kept;
}

struct ContentDecoder::Stage {
  Stage(std::string_view coding_name, std::size_t max_decoded)
      : name(coding_name), max(max_decoded) {}
  virtual ~Stage() = default;
  // Appends the decoding of `in` to `out`; false (with `message`) when it cannot.
  virtual bool run(std::string_view in, std::string& out) = 0;
  // The input so far ends where a compressed stream ends (or there was none).
  virtual bool at_end() const = 0;

  // Room for the next step of output at the end of `out`, for `input` bytes still to decode: at
  // most one byte past the limit, so that passing it shows.
  char* grow(std::string& out, std::size_t input, std::size_t& room) {
    room = std::min({kStep, std::max(kMinStep, 4 * input), max - produced + 1});
    auto old = out.size();
    // Doubling, as a string grows, but never past what the limit lets this stage add: a body
    // decoding to near the limit costs the limit, not twice it. (A reserve() below twice the
    // capacity doubles all the same in libstdc++; the last step is a fresh string of the bound.)
    if (old + room > out.capacity()) {
      std::size_t bound = old + (max - produced) + 1;
      std::size_t doubled = std::max(old + room, 2 * out.capacity());
      if (doubled <= bound) {
        out.reserve(doubled);
      } else {
        std::string exact;
        exact.reserve(bound);
        exact.append(out);
        out.swap(exact);
      }
    }
    out.resize(old + room);
    return out.data() + old;
  }
  // `wrote` of the `room` bytes grow() added were filled; false when that passed the limit.
  bool settle(std::string& out, std::size_t room, std::size_t wrote) {
    out.resize(out.size() - (room - wrote));
    produced += wrote;
    if (produced <= max) return true;
    out.resize(out.size() - (produced - max));
    return fail("it decodes to more than " + std::to_string(max) +
                " bytes (the largest body a trace record holds); decoding stopped there");
  }
  bool fail(std::string why) {
    message = std::move(why);
    return false;
  }
  bool corrupt(std::string_view detail) {
    return fail("corrupt " + name + " data at byte " + std::to_string(consumed) + " of its input (" +
                std::string(detail) + ")");
  }

  std::string name;
  std::size_t max;
  std::size_t consumed = 0;  // input bytes taken so far
  std::size_t produced = 0;  // output bytes so far
  std::string message;
};

namespace {

// gzip and deflate, through zlib's inflate.
class ZlibStage : public ContentDecoder::Stage {
 public:
  ZlibStage(std::string_view name, std::size_t max) : Stage(name, max), gzip_(name == "gzip") {}
  ~ZlibStage() override {
    if (started_) inflateEnd(&zs_);
  }

  bool run(std::string_view in, std::string& out) override {
    if (!started_) {
      int window_bits = 15 + 16;  // gzip only
      if (!gzip_) {
        // deflate: the first two bytes say whether a zlib header leads; hold them until both
        // are here.
        auto take = std::min(in.size(), 2 - head_.size());
        head_.append(in.substr(0, take));
        in.remove_prefix(take);
        if (head_.size() < 2) return true;
        auto cmf = static_cast<unsigned char>(head_[0]);
        auto flg = static_cast<unsigned char>(head_[1]);
        bool zlib_header = (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0;
        window_bits = zlib_header ? 15 : -15;
      }
      if (inflateInit2(&zs_, window_bits) != Z_OK) return fail("zlib could not start (out of memory)");
      started_ = true;
      std::string head = std::move(head_);
      if (!inflate_all(head, out)) return false;
    }
    return inflate_all(in, out);
  }

  bool at_end() const override { return ended_ || (consumed == 0 && head_.empty()); }

 private:
  bool inflate_all(std::string_view in, std::string& out) {
    bool output_pending = false;  // the last inflate filled its output: it may hold more
    while (!in.empty() || output_pending) {
      if (ended_) {
        // A further gzip member continues the body; anything after a deflate stream is an error.
        if (!gzip_) return corrupt("bytes after the end of the compressed stream");
        inflateReset(&zs_);
        ended_ = false;
      }
      std::size_t room;
      char* tail = grow(out, in.size(), room);
      auto given = static_cast<uInt>(std::min<std::size_t>(in.size(), 1u << 30));
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      zs_.avail_in = given;
      zs_.next_out = reinterpret_cast<Bytef*>(tail);
      zs_.avail_out = static_cast<uInt>(room);
      int status = inflate(&zs_, Z_NO_FLUSH);
      auto taken = given - zs_.avail_in;
      in.remove_prefix(taken);
      consumed += taken;
      if (!settle(out, room, room - zs_.avail_out)) return false;
      output_pending = zs_.avail_out == 0;
      if (status == Z_STREAM_END) {
        ended_ = true;
        output_pending = false;
      } else if (status == Z_BUF_ERROR) {
        if (!output_pending) break;  // all input taken: more is needed
      } else if (status != Z_OK) {
        return corrupt(zs_.msg ? std::string(zs_.msg) : "zlib status " + std::to_string(status));
      }
    }
    return true;
  }

  z_stream zs_{};
  std::string head_;  // deflate: its first bytes, until the header check can be made
  bool gzip_;
  bool started_ = false;
  bool ended_ = false;
};

class BrotliStage : public ContentDecoder::Stage {
 public:
  explicit BrotliStage(std::size_t max)
      : Stage("br", max), state_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)) {
    if (!state_) throw std::bad_alloc();
  }
  ~BrotliStage() override { BrotliDecoderDestroyInstance(state_); }

  bool run(std::string_view in, std::string& out) override {
    auto next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    std::size_t avail_in = in.size();
    for (;;) {
      if (ended_) {
        if (avail_in == 0) break;
        consumed += in.size() - avail_in;
        return corrupt("bytes after the end of the compressed stream");
      }
      std::size_t room;
      auto next_out = reinterpret_cast<std::uint8_t*>(grow(out, avail_in, room));
      std::size_t avail_out = room;
      auto result = BrotliDecoderDecompressStream(state_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      if (!settle(out, room, room - avail_out)) return false;
      if (result == BROTLI_DECODER_RESULT_ERROR) {
        consumed += in.size() - avail_in;
        return corrupt(BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state_)));
      }
      if (result == BROTLI_DECODER_RESULT_SUCCESS) ended_ = true;
      if (result == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) break;
      // NEEDS_MORE_OUTPUT: another step of room
    }
    consumed += in.size() - avail_in;
    return true;
  }
  bool at_end() const override { return ended_ || consumed == 0; }

 private:
  BrotliDecoderState* state_;
  bool ended_ = false;
};

class ZstdStage : public ContentDecoder::Stage {
 public:
  explicit ZstdStage(std::size_t max) : Stage("zstd", max), stream_(ZSTD_createDStream()) {
    if (!stream_) throw std::bad_alloc();
    ZSTD_DCtx_setParameter(stream_, ZSTD_d_windowLogMax, kZstdWindowLogMax);
  }
  ~ZstdStage() override { ZSTD_freeDStream(stream_); }

  // Each frame's 4-byte magic number is checked before zstd sees the frame: RFC 8878 frames and
  // skippable frames go on, anything else (zstd's legacy pre-1.0 formats included, which libzstd
  // would otherwise decode or refuse depending on how the body was split) is corrupt input.
  //
  // libzstd judges input it reads in pieces differently from input it reads at once (three
  // findings of fuzz_content_coding), so it is made to see the same calls however the body
  // arrives, by two rules: it is given input only in the steps it asks for (the frame header, then
  // each hint), each once it has arrived whole; and output it holds back is drained by calls with
  // no input before the next step is given. What has arrived of a step is held here, appended to
  // as more arrives (so a step that comes in many small reads costs its size, not its square).
  bool run(std::string_view in, std::string& out) override {
    while (!held_.empty() && !in.empty()) {
      const std::size_t want = step_wanted(held_);
      const std::size_t take = std::min(want - std::min(want, held_.size()), in.size());
      held_.append(in.substr(0, take));
      in.remove_prefix(take);
      if (held_.size() < want) return true;  // all of `in` is held: the step is still short
      std::string step = std::exchange(held_, {});
      if (!decompress(step, out)) return false;
    }
    return in.empty() || decompress(in, out);
  }
  bool at_end() const override { return boundary_ && held_.empty(); }

 private:
  static constexpr std::size_t kMagicBytes = 4;

  static bool known_magic(const char* bytes) {
    std::uint32_t magic = 0;
    for (std::size_t i = 0; i < kMagicBytes; ++i)
      magic |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return magic == ZSTD_MAGICNUMBER || (magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
  }

  // How many bytes the frame header starting at `frame` takes (its magic number known), as RFC
  // 8878 lays it out: more than `available` while they do not hold it all.
  static std::size_t header_bytes(const char* frame, std::size_t available) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(frame);
    if ((bytes[0] & 0xF0) == 0x50) return 8;  // a skippable frame: magic and a 4-byte size
    if (available < kMagicBytes + 1) return available + 1;
    const unsigned descriptor = bytes[kMagicBytes];
    const bool single_segment = (descriptor >> 5) & 1;
    static constexpr std::size_t kDictionaryIdBytes[] = {0, 1, 2, 4};
    static constexpr std::size_t kContentSizeBytes[] = {0, 2, 4, 8};
    std::size_t content_size = kContentSizeBytes[descriptor >> 6];
    if ((descriptor >> 6) == 0 && single_segment) content_size = 1;
    return kMagicBytes + 1 + (single_segment ? 0 : 1) + kDictionaryIdBytes[descriptor & 3] + content_size;
  }

  // How many bytes the next step takes, `start` being what has arrived of it: at a frame boundary
  // the magic number, then the frame header (known once its descriptor byte is in); inside a frame
  // what libzstd asked for. An unknown magic wants nothing more: decompress() refuses it.
  std::size_t step_wanted(std::string_view start) const {
    if (!boundary_) return next_input_;
    if (start.size() < kMagicBytes) return kMagicBytes;
    if (!known_magic(start.data())) return start.size();
    return header_bytes(start.data(), start.size());
  }

  // Decodes `in` step by step; a last step that has not arrived whole is held for run().
  bool decompress(std::string_view in, std::string& out) {
    std::size_t pos = 0;
    for (;;) {
      if (output_pending_) {  // drain what libzstd holds back before giving it more
        if (!call({}, out, pos)) return false;
        continue;
      }
      if (pos == in.size()) break;
      const std::string_view rest = in.substr(pos);
      const std::size_t want = step_wanted(rest);
      if (boundary_ && rest.size() >= kMagicBytes && !known_magic(rest.data())) {
        consumed += pos;
        return corrupt("not a zstd frame: unknown magic number");
      }
      if (rest.size() < want) {
        held_.assign(rest);
        break;
      }
      if (boundary_) next_input_ = want;  // the frame header
      boundary_ = false;
      const std::size_t before = pos;
      if (!call(rest.substr(0, next_input_), out, pos)) return false;
      consumed += pos - before;
    }
    return true;
  }

  // One call of libzstd on `step` (empty: only drain held-back output); `pos` advances by what it
  // took. Afterwards: whether a frame ended, whether output waits, and what it asks for next (the
  // rest of this step while it did not take it all, else its hint).
  bool call(std::string_view step, std::string& out, std::size_t& pos) {
    ZSTD_inBuffer chunk{step.data(), step.size(), 0};
    std::size_t room;
    char* tail = grow(out, step.size(), room);
    ZSTD_outBuffer output{tail, room, 0};
    const auto hint = ZSTD_decompressStream(stream_, &output, &chunk);
    if (!settle(out, room, output.pos)) return false;
    pos += chunk.pos;
    if (ZSTD_isError(hint)) {
      consumed += chunk.pos;
      return corrupt(ZSTD_getErrorName(hint));
    }
    if (!step.empty()) step_left_ = step.size() - chunk.pos;
    boundary_ = hint == 0;  // a frame ended and is flushed; what it did not take starts the next
    if (boundary_) step_left_ = 0;
    output_pending_ = hint != 0 && output.pos == output.size;
    next_input_ = step_left_ != 0 ? step_left_ : (boundary_ ? 0 : hint);
    return true;
  }

  ZSTD_DStream* stream_;
  bool boundary_ = true;         // the next byte starts a frame (or the body could end here)
  bool output_pending_ = false;  // libzstd filled the room it was given: it may hold more
  std::string held_;             // what has arrived of the next step, until it is whole
  std::size_t next_input_ = 0;   // the input libzstd asked for next
  std::size_t step_left_ = 0;    // of the last step given, the bytes libzstd did not take yet
};

}  // namespace

ContentDecoder::ContentDecoder(std::string_view content_encoding, std::size_t max_decoded)
    : coding_(trim_ows(content_encoding)) {
  auto codings = list_items(content_encoding);
  // Each coding holds a decompressor's state (brotli's and zstd's run to hundreds of KiB once
  // used); no server applies more than two. A longer list is refused, not built.
  std::size_t applied = std::count_if(codings.begin(), codings.end(), [](std::string_view coding) {
    return !boost::beast::iequals(coding, "identity");
  });
  if (applied > kMaxCodings) {
    error_ = "Content-Encoding lists " + std::to_string(applied) + " codings; retrace undoes at most " +
             std::to_string(kMaxCodings);
    coding_ = coding_.substr(0, 200);
    active_ = true;
    return;
  }
  for (auto it = codings.rbegin(); it != codings.rend(); ++it) {
    auto coding = *it;
    if (boost::beast::iequals(coding, "identity")) continue;
    if (boost::beast::iequals(coding, "gzip") || boost::beast::iequals(coding, "x-gzip")) {
      stages_.push_back(std::make_unique<ZlibStage>("gzip", max_decoded));
    } else if (boost::beast::iequals(coding, "deflate")) {
      stages_.push_back(std::make_unique<ZlibStage>("deflate", max_decoded));
    } else if (boost::beast::iequals(coding, "br")) {
      stages_.push_back(std::make_unique<BrotliStage>(max_decoded));
    } else if (boost::beast::iequals(coding, "zstd")) {
      stages_.push_back(std::make_unique<ZstdStage>(max_decoded));
    } else {
      error_ = "Content-Encoding " + coding_ + ": retrace cannot decode '" + std::string(coding) +
               "' (it decodes gzip, deflate, br and zstd)";
      stages_.clear();
      active_ = true;
      return;
    }
  }
  active_ = !stages_.empty();
}

ContentDecoder::~ContentDecoder() = default;
ContentDecoder::ContentDecoder(ContentDecoder&&) noexcept = default;
ContentDecoder& ContentDecoder::operator=(ContentDecoder&&) noexcept = default;

bool ContentDecoder::feed(std::string_view coded, std::string& out) {
  if (failed()) return false;
  if (!active_) {
    out.append(coded);
    return true;
  }
  std::string_view input = coded;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    bool last = i + 1 == stages_.size();
    std::string& target = last ? out : between_[i % 2];
    if (!last) target.clear();
    if (!stages_[i]->run(input, target)) {
      error_ = "Content-Encoding " + coding_ + ": " + stages_[i]->message;
      return false;
    }
    input = target;
  }
  return true;
}

bool ContentDecoder::finish() {
  if (failed()) return false;
  for (const auto& stage : stages_) {
    if (stage->at_end()) continue;
    error_ = "Content-Encoding " + coding_ + ": the body ended inside the " + stage->name +
             " stream, after " + std::to_string(stage->consumed) + " bytes of its input";
    cut_short_ = true;
    return false;
  }
  return true;
}

std::string ContentDecoder::trace_note() const {
  if (!failed()) return {};
  return error_ + (cut_short_ ? "; the stored body is what decoded before the end"
                              : "; the stored body is the bytes as received, not decoded");
}

}  // namespace retrace::net
