// The .rtrace writer and reader. Byte layout (see trace.hpp and trace.capnp):
//
//   zstd frame 0:   [segment table | segments] of Record{header}
//   zstd frame k:   [segment table | segments] of Record{exchange} ... (one frame per flush)
//   skippable:      u32le 0x184D2A5E, u32le size, [segment table | segments] of TraceIndex
//
// Every zstd frame carries a content checksum and holds whole messages only, so the reader can
// accept a frame's records once the frame decoded and verified, and drop a torn or corrupt tail
// at a frame boundary.
#include "format/trace.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <kj/exception.h>

#include "trace.capnp.h"

namespace retrace {

// ---------------------------------------------------------------------------------------------
// Names

std::string_view to_string(Source source) {
  switch (source) {
    case Source::recorded: return "recorded";
    case Source::replayed: return "replayed";
    case Source::imported: return "imported";
  }
  return "unknown";
}

std::string_view to_string(TokenKind kind) {
  switch (kind) {
    case TokenKind::none: return "none";
    case TokenKind::text_deltas: return "text_deltas";
    case TokenKind::logprob_tokens: return "logprob_tokens";
    case TokenKind::token_ids: return "token_ids";
  }
  return "unknown";
}

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::none: return "none";
    case ErrorKind::connect: return "connect";
    case ErrorKind::tls: return "tls";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::reset: return "reset";
    case ErrorKind::http_status: return "http_status";
    case ErrorKind::protocol: return "protocol";
    case ErrorKind::cut: return "cut";
  }
  return "unknown";
}

std::optional<TokenKind> token_kind_from_string(std::string_view name) {
  for (auto kind : {TokenKind::none, TokenKind::text_deltas, TokenKind::logprob_tokens,
                    TokenKind::token_ids})
    if (to_string(kind) == name) return kind;
  return std::nullopt;
}

std::optional<ErrorKind> error_kind_from_string(std::string_view name) {
  for (auto kind : {ErrorKind::none, ErrorKind::connect, ErrorKind::tls, ErrorKind::timeout,
                    ErrorKind::reset, ErrorKind::http_status, ErrorKind::protocol, ErrorKind::cut})
    if (to_string(kind) == name) return kind;
  return std::nullopt;
}

std::optional<Source> source_from_string(std::string_view name) {
  for (auto source : {Source::recorded, Source::replayed, Source::imported})
    if (to_string(source) == name) return source;
  return std::nullopt;
}

const std::string* Exchange::label(std::string_view key) const {
  for (const auto& label : labels)
    if (label.key == key) return &label.value;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Request key

namespace {

// JSON with object keys sorted recursively and no whitespace; scalars as Boost.JSON prints them.
void write_canonical(const boost::json::value& value, std::string& out) {
  switch (value.kind()) {
    case boost::json::kind::object: {
      const auto& object = value.get_object();
      std::vector<const boost::json::key_value_pair*> members;
      members.reserve(object.size());
      for (const auto& member : object) members.push_back(&member);
      std::sort(members.begin(), members.end(),
                [](auto* a, auto* b) { return a->key() < b->key(); });
      out += '{';
      bool first = true;
      for (const auto* member : members) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(boost::json::string_view(member->key()));
        out += ':';
        write_canonical(member->value(), out);
      }
      out += '}';
      break;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value.get_array()) {
        if (!first) out += ',';
        first = false;
        write_canonical(element, out);
      }
      out += ']';
      break;
    }
    default:
      out += boost::json::serialize(value);
  }
}

}  // namespace

RequestKey request_key(std::string_view method, std::string_view target, std::string_view body) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  static constexpr char kSeparator = '\0';
  XXH3_128bits_update(&state, method.data(), method.size());
  XXH3_128bits_update(&state, &kSeparator, 1);
  XXH3_128bits_update(&state, target.data(), target.size());
  XXH3_128bits_update(&state, &kSeparator, 1);
  boost::json::error_code error;
  boost::json::value parsed = boost::json::parse(body, error);
  if (!error && !body.empty()) {
    std::string canonical;
    canonical.reserve(body.size());
    write_canonical(parsed, canonical);
    XXH3_128bits_update(&state, canonical.data(), canonical.size());
  } else {
    XXH3_128bits_update(&state, body.data(), body.size());
  }
  XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return RequestKey{hash.high64, hash.low64};
}

std::string RequestKey::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(32, '0');
  for (int i = 0; i < 16; ++i) {
    text[15 - i] = kDigits[(hi >> (4 * i)) & 0xf];
    text[31 - i] = kDigits[(lo >> (4 * i)) & 0xf];
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// Plain structs <-> Cap'n Proto

namespace {

constexpr std::uint32_t kZstdMagic = 0xFD2FB528;
constexpr std::uint32_t kIndexMagic = 0x184D2A5E;
constexpr std::uint32_t kSkippableMask = 0xFFFFFFF0;
constexpr std::uint32_t kSkippableBase = 0x184D2A50;

kj::StringPtr text(const std::string& s) { return kj::StringPtr(s.c_str(), s.size()); }
capnp::Data::Reader data(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
void assign(std::string& out, capnp::Text::Reader in) { out.assign(in.begin(), in.size()); }
void assign(std::string& out, capnp::Data::Reader in) {
  out.assign(reinterpret_cast<const char*>(in.begin()), in.size());
}

wire::Source to_wire(Source source) { return static_cast<wire::Source>(source); }
wire::TokenKind to_wire(TokenKind kind) { return static_cast<wire::TokenKind>(kind); }
wire::ErrorKind to_wire(ErrorKind kind) { return static_cast<wire::ErrorKind>(kind); }

// Unknown enumerants (from a newer minor version) read as the neutral value.
Source from_wire(wire::Source source) {
  auto value = static_cast<unsigned>(source);
  return value <= 2 ? static_cast<Source>(value) : Source::recorded;
}
TokenKind from_wire(wire::TokenKind kind) {
  auto value = static_cast<unsigned>(kind);
  return value <= 3 ? static_cast<TokenKind>(value) : TokenKind::none;
}
ErrorKind from_wire(wire::ErrorKind kind) {
  auto value = static_cast<unsigned>(kind);
  return value <= 7 ? static_cast<ErrorKind>(value) : ErrorKind::protocol;
}

void fill_labels(capnp::List<wire::Label>::Builder list, const std::vector<Label>& labels) {
  for (unsigned i = 0; i < labels.size(); ++i) {
    auto label = list[i];
    label.setKey(text(labels[i].key));
    label.setValue(text(labels[i].value));
  }
}

void fill_headers(capnp::List<wire::HttpHeader>::Builder list,
                  const std::vector<HttpHeader>& headers) {
  for (unsigned i = 0; i < headers.size(); ++i) {
    auto header = list[i];
    header.setName(text(headers[i].name));
    header.setValue(text(headers[i].value));
  }
}

void read_labels(capnp::List<wire::Label>::Reader list, std::vector<Label>& labels) {
  labels.resize(list.size());
  for (unsigned i = 0; i < list.size(); ++i) {
    auto label = list[i];
    assign(labels[i].key, label.getKey());
    assign(labels[i].value, label.getValue());
  }
}

void read_headers(capnp::List<wire::HttpHeader>::Reader list, std::vector<HttpHeader>& headers) {
  headers.resize(list.size());
  for (unsigned i = 0; i < list.size(); ++i) {
    auto header = list[i];
    assign(headers[i].name, header.getName());
    assign(headers[i].value, header.getValue());
  }
}

void fill_header(wire::Header::Builder out, const TraceHeader& header) {
  out.setFormatMajor(header.format_major);
  out.setFormatMinor(header.format_minor);
  out.setToolVersion(text(header.tool_version));
  out.setCreatedUnixNs(header.created_unix_ns);
  out.setSource(to_wire(header.source));
  out.setTarget(text(header.target));
  out.setSettings(text(header.settings));
  out.setHost(text(header.host));
  fill_labels(out.initLabels(header.labels.size()), header.labels);
  out.setServerInfo(text(header.server_info));
}

void read_header(wire::Header::Reader in, TraceHeader& header) {
  header.format_major = in.getFormatMajor();
  header.format_minor = in.getFormatMinor();
  assign(header.tool_version, in.getToolVersion());
  header.created_unix_ns = in.getCreatedUnixNs();
  header.source = from_wire(in.getSource());
  assign(header.target, in.getTarget());
  assign(header.settings, in.getSettings());
  assign(header.host, in.getHost());
  read_labels(in.getLabels(), header.labels);
  assign(header.server_info, in.getServerInfo());
}

void fill_exchange(wire::Exchange::Builder out, const Exchange& exchange) {
  out.setId(exchange.id);
  out.setHasSourceId(exchange.source_id.has_value());
  out.setSourceId(exchange.source_id.value_or(0));
  out.setKeyHi(exchange.key.hi);
  out.setKeyLo(exchange.key.lo);
  out.setSessionId(text(exchange.session_id));
  out.setStartUnixNs(exchange.start_unix_ns);
  out.setIntendedSendNs(exchange.intended_send_ns);
  out.setActualSendNs(exchange.actual_send_ns);
  out.setFirstByteNs(exchange.first_byte_ns);
  out.setEndNs(exchange.end_ns);

  auto request = out.initRequest();
  request.setMethod(text(exchange.request.method));
  request.setTarget(text(exchange.request.target));
  fill_headers(request.initHeaders(exchange.request.headers.size()), exchange.request.headers);
  request.setBody(data(exchange.request.body));

  auto response = out.initResponse();
  response.setStatus(exchange.response.status);
  fill_headers(response.initHeaders(exchange.response.headers.size()),
               exchange.response.headers);
  response.setBody(data(exchange.response.body));
  response.setStreamed(exchange.response.streamed);
  auto events = response.initEvents(exchange.response.events.size());
  for (unsigned i = 0; i < exchange.response.events.size(); ++i) {
    auto event = events[i];
    event.setOffsetNs(exchange.response.events[i].offset_ns);
    event.setData(data(exchange.response.events[i].data));
  }

  auto choices = out.initChoices(exchange.choices.size());
  for (unsigned c = 0; c < exchange.choices.size(); ++c) {
    const Choice& choice = exchange.choices[c];
    auto choice_out = choices[c];
    choice_out.setIndex(choice.index);
    choice_out.setKind(to_wire(choice.kind));
    choice_out.setFinishReason(text(choice.finish_reason));
    auto tokens = choice_out.initTokens(choice.tokens.size());
    for (unsigned t = 0; t < choice.tokens.size(); ++t) {
      const Token& token = choice.tokens[t];
      auto token_out = tokens[t];
      token_out.setId(token.id);
      token_out.setBytes(data(token.bytes));
      token_out.setHasLogprob(token.has_logprob);
      token_out.setLogprob(token.logprob);
      token_out.setOffsetNs(token.offset_ns);
      if (!token.top.empty()) {
        auto top = token_out.initTop(token.top.size());
        for (unsigned a = 0; a < token.top.size(); ++a) {
          auto alternative = top[a];
          alternative.setId(token.top[a].id);
          alternative.setBytes(data(token.top[a].bytes));
          alternative.setLogprob(token.top[a].logprob);
        }
      }
    }
  }

  auto usage = out.initUsage();
  usage.setPromptTokens(exchange.usage.prompt_tokens);
  usage.setCompletionTokens(exchange.usage.completion_tokens);
  usage.setTotalTokens(exchange.usage.total_tokens);

  auto error = out.initError();
  error.setKind(to_wire(exchange.error.kind));
  error.setMessage(text(exchange.error.message));

  fill_labels(out.initLabels(exchange.labels.size()), exchange.labels);
  out.setHasExpected(exchange.expected.has_value());
  if (exchange.expected) out.setExpected(text(*exchange.expected));
  out.setDialect(text(exchange.dialect));
  out.setDecodeNote(text(exchange.decode_note));
}

// Reuses `exchange`'s strings and vectors: a reader loop allocates only while records grow.
void read_exchange(wire::Exchange::Reader in, Exchange& exchange) {
  exchange.id = in.getId();
  if (in.getHasSourceId())
    exchange.source_id = in.getSourceId();
  else
    exchange.source_id.reset();
  exchange.key = RequestKey{in.getKeyHi(), in.getKeyLo()};
  assign(exchange.session_id, in.getSessionId());
  exchange.start_unix_ns = in.getStartUnixNs();
  exchange.intended_send_ns = in.getIntendedSendNs();
  exchange.actual_send_ns = in.getActualSendNs();
  exchange.first_byte_ns = in.getFirstByteNs();
  exchange.end_ns = in.getEndNs();

  auto request = in.getRequest();
  assign(exchange.request.method, request.getMethod());
  assign(exchange.request.target, request.getTarget());
  read_headers(request.getHeaders(), exchange.request.headers);
  assign(exchange.request.body, request.getBody());

  auto response = in.getResponse();
  exchange.response.status = response.getStatus();
  read_headers(response.getHeaders(), exchange.response.headers);
  assign(exchange.response.body, response.getBody());
  exchange.response.streamed = response.getStreamed();
  auto events = response.getEvents();
  exchange.response.events.resize(events.size());
  for (unsigned i = 0; i < events.size(); ++i) {
    auto event = events[i];
    exchange.response.events[i].offset_ns = event.getOffsetNs();
    assign(exchange.response.events[i].data, event.getData());
  }

  auto choices = in.getChoices();
  exchange.choices.resize(choices.size());
  for (unsigned c = 0; c < choices.size(); ++c) {
    auto choice_in = choices[c];
    Choice& choice = exchange.choices[c];
    choice.index = choice_in.getIndex();
    choice.kind = from_wire(choice_in.getKind());
    assign(choice.finish_reason, choice_in.getFinishReason());
    auto tokens = choice_in.getTokens();
    choice.tokens.resize(tokens.size());
    for (unsigned t = 0; t < tokens.size(); ++t) {
      auto token_in = tokens[t];
      Token& token = choice.tokens[t];
      token.id = token_in.getId();
      assign(token.bytes, token_in.getBytes());
      token.has_logprob = token_in.getHasLogprob();
      token.logprob = token_in.getLogprob();
      token.offset_ns = token_in.getOffsetNs();
      auto top = token_in.getTop();
      token.top.resize(top.size());
      for (unsigned a = 0; a < top.size(); ++a) {
        auto alternative = top[a];
        token.top[a].id = alternative.getId();
        assign(token.top[a].bytes, alternative.getBytes());
        token.top[a].logprob = alternative.getLogprob();
      }
    }
  }

  auto usage = in.getUsage();
  exchange.usage.prompt_tokens = usage.getPromptTokens();
  exchange.usage.completion_tokens = usage.getCompletionTokens();
  exchange.usage.total_tokens = usage.getTotalTokens();

  auto error = in.getError();
  exchange.error.kind = from_wire(error.getKind());
  assign(exchange.error.message, error.getMessage());

  read_labels(in.getLabels(), exchange.labels);
  if (in.getHasExpected()) {
    if (!exchange.expected) exchange.expected.emplace();
    assign(*exchange.expected, in.getExpected());
  } else {
    exchange.expected.reset();
  }
  assign(exchange.dialect, in.getDialect());
  assign(exchange.decode_note, in.getDecodeNote());
}

std::string errno_text(int error) { return std::strerror(error); }

std::uint32_t load_le32(const void* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, 4);
  return value;  // the formats are little-endian, as is every host we build for
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Writer

struct TraceWriter::Impl {
  std::filesystem::path path;
  WriterOptions options;
  int fd = -1;
  ZSTD_CCtx* compressor = nullptr;
  // The first segment of every record's builder; MallocMessageBuilder zeroes what it used when
  // it is destroyed, so the scratch stays zeroed between records.
  std::vector<std::uint64_t> scratch;
  std::string compressed;  // compressed bytes not yet written to the file
  std::vector<std::uint32_t> segment_table;
  std::uint64_t file_offset = 0;
  std::uint64_t exchanges = 0;
  std::uint64_t records = 0;
  // The frame being built.
  bool frame_open = false;
  std::uint64_t frame_offset = 0;
  std::uint64_t frame_first_record = 0;
  std::uint32_t frame_records = 0;
  std::uint64_t frame_bytes = 0;  // decompressed
  std::chrono::steady_clock::time_point frame_started;
  // For the index.
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>> frames;
  std::vector<std::tuple<std::uint64_t, RequestKey, std::uint32_t>> keys;
  bool closed = false;

  ~Impl() {
    if (compressor) ZSTD_freeCCtx(compressor);
    if (fd >= 0) ::close(fd);
  }

  [[noreturn]] void fail(const std::string& what, int error) {
    throw TraceError("cannot write trace " + path.string() + " at offset " +
                     std::to_string(file_offset) + ": " + what + ": " + errno_text(error) +
                     (error == ENOSPC ? " (the disk is full; free space or write elsewhere)" : ""));
  }

  void write_out() {
    std::size_t done = 0;
    while (done < compressed.size()) {
      ssize_t n = ::write(fd, compressed.data() + done, compressed.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        int error = errno;
        compressed.erase(0, done);
        fail("write failed", error);
      }
      done += static_cast<std::size_t>(n);
      file_offset += static_cast<std::uint64_t>(n);
    }
    compressed.clear();
  }

  void compress(const void* bytes, std::size_t size, ZSTD_EndDirective mode) {
    ZSTD_inBuffer input{bytes, size, 0};
    for (;;) {
      std::size_t used = compressed.size();
      std::size_t room = std::max<std::size_t>(ZSTD_CStreamOutSize(), size / 2 + 1024);
      compressed.resize(used + room);
      ZSTD_outBuffer output{compressed.data() + used, room, 0};
      std::size_t remaining = ZSTD_compressStream2(compressor, &output, &input, mode);
      compressed.resize(used + output.pos);
      if (ZSTD_isError(remaining))
        throw TraceError("cannot compress trace " + path.string() + ": " +
                         ZSTD_getErrorName(remaining));
      bool done = mode == ZSTD_e_continue ? input.pos == input.size : remaining == 0;
      if (done) break;
    }
    // Large frames reach the file as they grow, so memory stays bounded by the frame buffer.
    if (compressed.size() >= (1u << 20)) write_out();
  }

  // Builds one record and appends it to the open frame (opening one), unless its framed size
  // passes max_frame_bytes: then nothing is written and it returns false. A frame that the record
  // would take past max_frame_bytes is closed first.
  template <class Fill>
  bool append_record(Fill&& fill) {
    capnp::MallocMessageBuilder builder(
        kj::arrayPtr(reinterpret_cast<capnp::word*>(scratch.data()), scratch.size()));
    fill(builder.initRoot<wire::Record>());
    auto segments = builder.getSegmentsForOutput();
    // Stream framing: u32 (segment count - 1), u32 size of each segment, padded to 8 bytes.
    segment_table.assign((segments.size() + 2) & ~std::size_t{1}, 0);
    segment_table[0] = static_cast<std::uint32_t>(segments.size() - 1);
    std::uint64_t bytes = segment_table.size() * 4;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      segment_table[i + 1] = static_cast<std::uint32_t>(segments[i].size());
      bytes += segments[i].size() * sizeof(capnp::word);
    }
    if (bytes > options.max_frame_bytes) return false;
    if (frame_open && frame_bytes + bytes > options.max_frame_bytes) end_frame();
    if (!frame_open) {
      frame_open = true;
      frame_offset = file_offset + compressed.size();
      frame_first_record = records;
      frame_records = 0;
      frame_bytes = 0;
      frame_started = std::chrono::steady_clock::now();
    }
    compress(segment_table.data(), segment_table.size() * 4, ZSTD_e_continue);
    for (auto segment : segments)
      compress(segment.begin(), segment.size() * sizeof(capnp::word), ZSTD_e_continue);
    frame_bytes += bytes;
    ++records;
    ++frame_records;
    return true;
  }

  void end_frame() {
    if (!frame_open) return;
    compress(nullptr, 0, ZSTD_e_end);
    frames.emplace_back(frame_offset, frame_first_record, frame_records);
    frame_open = false;
    write_out();
  }

  void write_index() {
    capnp::MallocMessageBuilder builder;
    auto index = builder.initRoot<wire::TraceIndex>();
    auto frame_list = index.initFrames(frames.size());
    for (unsigned i = 0; i < frames.size(); ++i) {
      auto entry = frame_list[i];
      entry.setOffset(std::get<0>(frames[i]));
      entry.setFirstRecord(std::get<1>(frames[i]));
      entry.setRecords(std::get<2>(frames[i]));
    }
    auto key_list = index.initKeys(keys.size());
    for (unsigned i = 0; i < keys.size(); ++i) {
      auto entry = key_list[i];
      entry.setExchangeId(std::get<0>(keys[i]));
      entry.setKeyHi(std::get<1>(keys[i]).hi);
      entry.setKeyLo(std::get<1>(keys[i]).lo);
      entry.setFrame(std::get<2>(keys[i]));
    }
    kj::Array<capnp::word> words = capnp::messageToFlatArray(builder);
    auto bytes = words.asBytes();
    std::uint32_t prefix[2] = {kIndexMagic, static_cast<std::uint32_t>(bytes.size())};
    compressed.append(reinterpret_cast<const char*>(prefix), sizeof prefix);
    compressed.append(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
    write_out();
  }
};

TraceWriter::TraceWriter(const std::filesystem::path& path, const TraceHeader& header,
                         WriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->options = options;
  if (impl_->options.flush_every == 0) impl_->options.flush_every = 1;
  impl_->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (impl_->fd < 0) {
    int error = errno;
    throw TraceError("cannot create trace " + path.string() + ": " + errno_text(error));
  }
  // An existing file keeps its mode through O_TRUNC; traces hold prompts and headers, so narrow it.
  struct stat status {};
  if (::fstat(impl_->fd, &status) == 0 && S_ISREG(status.st_mode) &&
      (status.st_mode & 0077) != 0)
    ::fchmod(impl_->fd, 0600);

  impl_->compressor = ZSTD_createCCtx();
  if (!impl_->compressor) throw TraceError("cannot create a zstd compressor (out of memory)");
  ZSTD_CCtx_setParameter(impl_->compressor, ZSTD_c_compressionLevel, options.zstd_level);
  ZSTD_CCtx_setParameter(impl_->compressor, ZSTD_c_checksumFlag, 1);
  impl_->scratch.assign(64 * 1024, 0);  // 512 KiB: a long streamed exchange fits one segment

  // The file is written in this writer's format, whatever version the caller's header came from.
  TraceHeader stamped = header;
  stamped.format_major = kFormatMajor;
  stamped.format_minor = kFormatMinor;
  if (!impl_->append_record(
          [&](wire::Record::Builder record) { fill_header(record.initHeader(), stamped); }))
    throw TraceError("cannot write trace " + path.string() +
                     ": its header is larger than a trace message may be (" +
                     std::to_string(impl_->options.max_frame_bytes) + " bytes)");
  impl_->end_frame();
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (...) {
    // Documented: the destructor swallows; close() reports.
  }
}

void TraceWriter::write(const Exchange& exchange) {
  Impl& impl = *impl_;
  if (impl.closed) throw TraceError("trace " + impl.path.string() + " is already closed");
  auto fill = [](const Exchange& from) {
    return [&from](wire::Record::Builder record) { fill_exchange(record.initExchange(), from); };
  };
  if (!impl.append_record(fill(exchange))) {
    Exchange slim = exchange;
    std::uint64_t dropped = slim.request.body.size() + slim.response.body.size();
    for (const auto& event : slim.response.events) dropped += event.data.size();
    slim.request.body.clear();
    slim.response.body.clear();
    slim.response.events.clear();
    if (!slim.decode_note.empty()) slim.decode_note += "; ";
    slim.decode_note += "request and response bodies (" + std::to_string(dropped) +
                        " bytes) not kept: the exchange would pass the " +
                        std::to_string(impl.options.max_frame_bytes) +
                        " bytes a trace message may hold";
    if (!impl.append_record(fill(slim)))
      throw TraceError("cannot write exchange " + std::to_string(exchange.id) + " to trace " +
                       impl.path.string() + ": even without its bodies it passes the " +
                       std::to_string(impl.options.max_frame_bytes) +
                       " bytes a trace message may hold");
  }
  ++impl.exchanges;
  if (impl.options.write_index)
    impl.keys.emplace_back(exchange.id, exchange.key, static_cast<std::uint32_t>(impl.frames.size()));
  if (impl.frame_records >= impl.options.flush_every)
    impl.end_frame();
  else
    flush_if_due();
}

bool TraceWriter::flush_if_due() {
  Impl& impl = *impl_;
  if (impl.closed || !impl.frame_open || impl.options.flush_ms < 0) return false;
  if (std::chrono::steady_clock::now() - impl.frame_started <
      std::chrono::milliseconds(impl.options.flush_ms))
    return false;
  impl.end_frame();
  return true;
}

void TraceWriter::flush() {
  if (impl_->closed) return;
  impl_->end_frame();
}

void TraceWriter::close() {
  Impl& impl = *impl_;
  if (impl.closed) return;
  impl.closed = true;  // even when the flush below throws: a broken file is not retried
  impl.end_frame();
  if (impl.options.write_index) impl.write_index();
  int fd = impl.fd;
  impl.fd = -1;
  if (::close(fd) != 0) {
    int error = errno;
    impl.fail("close failed", error);
  }
}

std::uint64_t TraceWriter::exchanges_written() const { return impl_->exchanges; }
std::uint64_t TraceWriter::bytes_written() const { return impl_->file_offset; }

// ---------------------------------------------------------------------------------------------
// Reader

struct TraceReader::Impl {
  std::filesystem::path path;
  ReaderOptions options;
  int fd = -1;
  std::uint64_t file_size = 0;
  ZSTD_DCtx* decompressor = nullptr;

  // File input, read in chunks.
  std::vector<char> input;
  std::size_t input_pos = 0;
  std::size_t input_len = 0;
  std::uint64_t input_file_offset = 0;  // file offset of input[0]

  // The current decompressed frame, as words so messages are aligned for capnp.
  std::vector<std::uint64_t> frame;
  std::size_t frame_words = 0;
  std::size_t frame_cursor = 0;  // in words
  std::uint64_t frame_offset = 0;
  std::uint64_t frame_limit_bytes = 0;

  std::vector<std::uint64_t> skippable;  // index frame contents
  TraceHeader header;
  Recovery recovery;
  bool ended = false;
  bool has_index = false;
  TraceIndex index;
  std::uint64_t decompressed = 0;
  std::uint64_t peak_buffer_bytes = 0;

  ~Impl() {
    if (decompressor) ZSTD_freeDCtx(decompressor);
    if (fd >= 0) ::close(fd);
  }

  std::uint64_t offset() const { return input_file_offset + input_pos; }

  bool refill() {
    if (input_pos < input_len) return true;
    input_file_offset += input_len;
    input_pos = input_len = 0;
    for (;;) {
      ssize_t n = ::read(fd, input.data(), input.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int error = errno;
        throw TraceError("cannot read trace " + path.string() + " at offset " +
                         std::to_string(offset()) + ": " + errno_text(error));
      }
      input_len = static_cast<std::size_t>(n);
      return n > 0;
    }
  }

  // Copies exactly `size` bytes; false (consuming what there was) when the file ends first.
  bool read_exact(void* out, std::size_t size) {
    char* dst = static_cast<char*>(out);
    while (size > 0) {
      if (!refill()) return false;
      std::size_t n = std::min(size, input_len - input_pos);
      std::memcpy(dst, input.data() + input_pos, n);
      input_pos += n;
      dst += n;
      size -= n;
    }
    return true;
  }

  void torn(std::uint64_t at, std::string reason) {
    recovery.torn = true;
    recovery.dropped_from_offset = at;
    recovery.dropped_bytes = file_size > at ? file_size - at : 0;
    recovery.reason = std::move(reason);
    ended = true;
  }

  void note_buffers() {
    std::uint64_t bytes = (frame.size() + skippable.size()) * 8 + input.size();
    peak_buffer_bytes = std::max(peak_buffer_bytes, bytes);
  }

  void read_index(std::uint32_t size, std::uint64_t at) {
    if (size % 8 != 0 || size > frame_limit_bytes) {
      torn(at, "the index frame has an impossible size (" + std::to_string(size) + " bytes)");
      return;
    }
    skippable.assign(size / 8, 0);
    note_buffers();
    if (!read_exact(skippable.data(), size)) {
      torn(at, "the index frame is truncated");
      return;
    }
    try {
      kj::ArrayPtr<const capnp::word> words(
          reinterpret_cast<const capnp::word*>(skippable.data()), skippable.size());
      capnp::FlatArrayMessageReader message(words, to_capnp_options());
      auto root = message.getRoot<wire::TraceIndex>();
      auto frames = root.getFrames();
      auto keys = root.getKeys();
      index.frames.resize(frames.size());
      for (unsigned i = 0; i < frames.size(); ++i) {
        auto entry = frames[i];
        index.frames[i] = IndexedFrame{entry.getOffset(), entry.getFirstRecord(), entry.getRecords()};
      }
      index.keys.resize(keys.size());
      for (unsigned i = 0; i < keys.size(); ++i) {
        auto entry = keys[i];
        index.keys[i] = IndexedKey{entry.getExchangeId(), RequestKey{entry.getKeyHi(), entry.getKeyLo()},
                                   entry.getFrame()};
      }
      has_index = true;
    } catch (const kj::Exception& e) {
      torn(at, std::string("the index frame is corrupt: ") + e.getDescription().cStr());
    }
    skippable.clear();
    skippable.shrink_to_fit();
  }

  capnp::ReaderOptions to_capnp_options() const {
    capnp::ReaderOptions capnp_options;
    capnp_options.traversalLimitInWords = options.traversal_limit_words;
    capnp_options.nestingLimit = options.nesting_limit;
    return capnp_options;
  }

  // Decodes the next zstd frame into `frame`, skipping skippable frames. False at the end of the
  // file or at a torn/corrupt tail (then `recovery` says which).
  bool load_frame() {
    frame_words = frame_cursor = 0;
    for (;;) {
      if (!refill()) return false;  // clean end
      std::uint64_t at = offset();
      std::uint32_t magic = 0;
      if (!read_exact(&magic, 4)) {
        torn(at, "the file ends inside a frame header");
        return false;
      }
      if ((magic & kSkippableMask) == kSkippableBase) {
        std::uint32_t size = 0;
        if (!read_exact(&size, 4)) {
          torn(at, "the file ends inside a skippable frame header");
          return false;
        }
        if (magic == kIndexMagic) {
          read_index(size, at);
          if (ended) return false;
        } else {
          std::uint64_t left = size;
          while (left > 0) {
            if (!refill()) {
              torn(at, "a skippable frame is truncated");
              return false;
            }
            std::size_t n = std::min<std::uint64_t>(left, input_len - input_pos);
            input_pos += n;
            left -= n;
          }
        }
        continue;
      }
      if (magic != kZstdMagic) {
        torn(at, "no zstd frame starts here (bytes " + hex32(magic) + ")");
        return false;
      }
      frame_offset = at;
      return decompress_frame(magic);
    }
  }

  static std::string hex32(std::uint32_t value) {
    char text[16];
    unsigned char bytes[4];
    std::memcpy(bytes, &value, 4);
    std::snprintf(text, sizeof text, "%02x %02x %02x %02x", bytes[0], bytes[1], bytes[2],
                  bytes[3]);
    return text;
  }

  bool decompress_frame(std::uint32_t magic) {
    ZSTD_DCtx_reset(decompressor, ZSTD_reset_session_only);
    std::size_t produced = 0;  // bytes
    bool too_large = false;
    // Feeds `in` to the decompressor; returns zstd's hint (0: the frame is complete).
    auto step = [&](ZSTD_inBuffer& in) -> std::size_t {
      for (;;) {
        std::size_t room_needed = produced + ZSTD_DStreamOutSize();
        if (frame.size() * 8 < room_needed) {
          if (produced > frame_limit_bytes) {
            too_large = true;
            return 1;
          }
          frame.resize(std::max<std::size_t>(frame.size() * 2, room_needed / 8 + 1));
          note_buffers();
        }
        ZSTD_outBuffer out{frame.data(), frame.size() * 8, produced};
        std::size_t hint = ZSTD_decompressStream(decompressor, &out, &in);
        produced = out.pos;
        if (ZSTD_isError(hint) || hint == 0) return hint;
        if (in.pos == in.size && out.pos < out.size) return hint;  // needs more input
      }
    };
    auto failed = [&](std::size_t hint) {
      if (too_large) {
        torn(frame_offset, "a frame decompresses to more than " +
                               std::to_string(frame_limit_bytes) + " bytes");
        return true;
      }
      if (ZSTD_isError(hint)) {
        torn(frame_offset, std::string("corrupt zstd frame: ") + ZSTD_getErrorName(hint));
        return true;
      }
      return false;
    };
    ZSTD_inBuffer head{&magic, 4, 0};
    std::size_t hint = step(head);
    if (failed(hint)) return false;
    while (hint != 0) {
      if (!refill()) {
        torn(frame_offset, "the last zstd frame is incomplete (a torn write)");
        return false;
      }
      ZSTD_inBuffer in{input.data() + input_pos, input_len - input_pos, 0};
      hint = step(in);
      input_pos += in.pos;
      if (failed(hint)) return false;
    }
    if (produced % 8 != 0) {
      torn(frame_offset, "a frame's contents are not whole Cap'n Proto messages");
      return false;
    }
    frame_words = produced / 8;
    decompressed += produced;
    return true;
  }

  // The next message of the current frame as a word range; empty at the frame's end. Sets
  // `recovery` and returns nullopt when the frame's contents are not a message sequence.
  std::optional<kj::ArrayPtr<const capnp::word>> next_message() {
    const std::uint64_t* base = frame.data() + frame_cursor;
    std::size_t remaining = frame_words - frame_cursor;
    if (remaining == 0) return kj::ArrayPtr<const capnp::word>();
    std::uint32_t first[2];
    std::memcpy(first, base, 8);
    std::uint64_t segment_count = std::uint64_t{first[0]} + 1;
    std::uint64_t table_words = segment_count / 2 + 1;
    if (segment_count > 512 || table_words > remaining) {
      torn(frame_offset, "a corrupt Cap'n Proto segment table in the frame");
      return std::nullopt;
    }
    std::uint64_t total = table_words;
    const char* table = reinterpret_cast<const char*>(base);
    for (std::uint64_t i = 0; i < segment_count; ++i) total += load_le32(table + 4 + 4 * i);
    if (total > remaining) {
      torn(frame_offset, "a Cap'n Proto message runs past the end of its frame");
      return std::nullopt;
    }
    frame_cursor += total;
    return kj::ArrayPtr<const capnp::word>(reinterpret_cast<const capnp::word*>(base), total);
  }
};

namespace {
bool looks_like_text(const char* bytes, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x09 || (c > 0x0d && c < 0x20)) return false;
  }
  return size > 0;
}

// Says what a file that is not a zstd stream looks like, and what to try.
std::string sniff(const std::filesystem::path& path, const char* bytes, std::size_t size) {
  std::string what = path.string() + " is not a retrace trace (not a zstd stream): ";
  auto starts = [&](std::string_view prefix) {
    return size >= prefix.size() && std::memcmp(bytes, prefix.data(), prefix.size()) == 0;
  };
  if (size == 0) return what + "the file is empty";
  if (starts("\x1f\x8b")) return what + "it looks like gzip; decompress it with gunzip first";
  if (starts("BZh")) return what + "it looks like bzip2";
  if (starts("\xfd" "7zXZ")) return what + "it looks like xz";
  if (bytes[0] == '{' || bytes[0] == '[')
    return what + "it looks like JSON or JSONL; to turn a dataset into a trace try `retrace import " +
           path.string() + " --out TRACE.rtrace`";
  if (size >= 8 && load_le32(bytes) == 0 && load_le32(bytes + 4) < (1u << 20))
    return what + "it looks like an uncompressed Cap'n Proto stream; try `zstd " + path.string() +
           "` and read the .zst";
  if (looks_like_text(bytes, std::min<std::size_t>(size, 256)))
    return what + "it looks like a text file";
  return what + "unknown binary data";
}
}  // namespace

TraceReader::TraceReader(const std::filesystem::path& path, ReaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.path = path;
  impl.options = options;
  impl.frame_limit_bytes = std::max<std::uint64_t>(options.traversal_limit_words * 8, 1u << 20);
  impl.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl.fd < 0) {
    int error = errno;
    throw TraceError("cannot open trace " + path.string() + ": " + errno_text(error));
  }
  struct stat status {};
  if (::fstat(impl.fd, &status) != 0 || S_ISDIR(status.st_mode))
    throw TraceError("cannot read trace " + path.string() + ": not a regular file");
  impl.file_size = static_cast<std::uint64_t>(status.st_size);
  impl.decompressor = ZSTD_createDCtx();
  if (!impl.decompressor) throw TraceError("cannot create a zstd decompressor (out of memory)");
  impl.input.resize(ZSTD_DStreamInSize());

  impl.refill();
  if (impl.input_len < 4 || load_le32(impl.input.data()) != kZstdMagic)
    throw TraceError(sniff(path, impl.input.data(), impl.input_len));

  if (!impl.load_frame())
    throw TraceError("cannot read trace " + path.string() + ": no readable header: " +
                     impl.recovery.reason + " at offset " +
                     std::to_string(impl.recovery.dropped_from_offset));
  auto message = impl.next_message();
  if (!message || message->size() == 0)
    throw TraceError("cannot read trace " + path.string() + ": no readable header: " +
                     (message ? "the first frame is empty" : impl.recovery.reason));
  try {
    capnp::FlatArrayMessageReader reader(*message, impl.to_capnp_options());
    auto record = reader.getRoot<wire::Record>();
    if (!record.isHeader())
      throw TraceError("cannot read trace " + path.string() +
                       ": the first record is not a header (is this a retrace trace?)");
    auto header = record.getHeader();
    read_header(header, impl.header);
  } catch (const kj::Exception& e) {
    throw TraceError("cannot read trace " + path.string() + ": corrupt header: " +
                     e.getDescription().cStr());
  }
  if (impl.header.format_major > kFormatMajor)
    throw TraceError(path.string() + " uses trace format " +
                     std::to_string(impl.header.format_major) + "." +
                     std::to_string(impl.header.format_minor) + ", but this retrace reads format " +
                     std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor) +
                     " and older; upgrade retrace to read it");
  impl.recovery = Recovery{};
  impl.ended = false;
}

TraceReader::~TraceReader() = default;

const TraceHeader& TraceReader::header() const { return impl_->header; }

bool TraceReader::next(Exchange& out) {
  Impl& impl = *impl_;
  while (!impl.ended) {
    auto message = impl.next_message();
    if (!message) return false;
    if (message->size() == 0) {
      if (!impl.load_frame()) {
        impl.ended = true;
        return false;
      }
      continue;
    }
    try {
      capnp::FlatArrayMessageReader reader(*message, impl.to_capnp_options());
      auto record = reader.getRoot<wire::Record>();
      if (record.which() != wire::Record::EXCHANGE) continue;  // a repeated header, or newer kinds
      auto exchange = record.getExchange();
      read_exchange(exchange, out);
      return true;
    } catch (const kj::Exception& e) {
      impl.torn(impl.frame_offset,
                std::string("a corrupt record in the frame: ") + e.getDescription().cStr());
      return false;
    }
  }
  return false;
}

const Recovery& TraceReader::recovery() const { return impl_->recovery; }
std::uint64_t TraceReader::file_size() const { return impl_->file_size; }
std::uint64_t TraceReader::decompressed_bytes() const { return impl_->decompressed; }
bool TraceReader::has_index() const { return impl_->has_index; }
const TraceIndex& TraceReader::index() const { return impl_->index; }
std::uint64_t TraceReader::peak_buffer_bytes() const { return impl_->peak_buffer_bytes; }

LoadedTrace load_trace(const std::filesystem::path& path, ReaderOptions options) {
  TraceReader reader(path, options);
  LoadedTrace loaded;
  loaded.header = reader.header();
  Exchange exchange;
  while (reader.next(exchange)) loaded.exchanges.push_back(exchange);
  loaded.recovery = reader.recovery();
  return loaded;
}

}  // namespace retrace
