// Internal to format/: plain structs (trace.hpp) <-> Cap'n Proto structs (trace.capnp), and the
// framing constants the writer and reader share (the layout they frame: format/trace.capnp).
// Nothing outside format/ includes this header.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "format/trace.hpp"
#include "trace.capnp.h"

namespace retrace::detail {

constexpr std::uint32_t kZstdMagic = 0xFD2FB528;
constexpr std::uint32_t kIndexMagic = 0x184D2A5E;
constexpr std::uint32_t kSkippableMask = 0xFFFFFFF0;
constexpr std::uint32_t kSkippableBase = 0x184D2A50;

// How many list elements one message may still declare. Every element of every list retrace
// writes takes at least one word of the message, but Cap'n Proto lets a list of zero-sized
// structs claim millions of elements in a few bytes (it charges them to the traversal limit, which
// is 512 MiB); read into vectors they would take gigabytes. The reader refuses a message whose
// lists declare more elements than it has words, with a TraceError.
class ListBudget {
 public:
  explicit ListBudget(std::uint64_t message_words) : left_(message_words) {}
  // The list's size, charged to the budget.
  unsigned take(unsigned size, const char* what);

 private:
  std::uint64_t left_;
};

void fill_header(wire::Header::Builder out, const TraceHeader& header);
void read_header(wire::Header::Reader in, TraceHeader& header, ListBudget& budget);
void read_index(wire::TraceIndex::Reader in, TraceIndex& index);
// With `tokens_derived` (format 1.7, format/token_deriver.hpp: the writer found them derivable),
// each choice is written without its tokens, their count in tokenCount, and the flag set.
void fill_exchange(wire::Exchange::Builder out, const Exchange& exchange, bool tokens_derived = false);
// A choice's stored tokens and alternatives, written as words in one pass (wire_tokens.cpp): the
// bytes the generated setters make, without a call a field.
void fill_tokens(wire::Choice::Builder out, const Choice& choice);
// The same through the generated setters, field by field, into a list of choice.tokens.size():
// where the words cannot go in one block (a message whose segment ends before them: far pointers
// between segments), or a big-endian machine; and the reference its tests compare with.
void fill_tokens_by_setters(capnp::List<wire::Token>::Builder tokens, const Choice& choice);
// A stored request that cannot go on the wire as it is (format/wire_syntax.hpp): read_exchange
// throws it, and the reader leaves out that one record, not the rest of its frame.
class UnsendableRequest : public TraceError {
 public:
  using TraceError::TraceError;
};
// Reuses `exchange`'s strings and vectors: a reader loop allocates only while records grow.
// With `requests_only`, the response, the choices and the usage are left empty, not read (what
// sending the request again does not need: most of a recording's bytes); every other field is read.
// Throws UnsendableRequest for a request with a CR, LF or other control byte where the wire has
// none (its method, target, header names and values).
// `derived`: what of a derived exchange's tokens (format 1.7) to derive (trace.hpp's DecodeWants).
void read_exchange(wire::Exchange::Reader in, Exchange& exchange, ListBudget& budget,
                   bool requests_only = false, DecodeWants derived = {});
// A token's figures: every field but its bytes and alternatives (read_exchange's and RowReader's).
inline void read_token_figures(wire::Token::Reader in, Token& token) {
  token.id = in.getId();
  token.has_logprob = in.getHasLogprob();
  token.logprob = in.getLogprob();
  token.offset_ns = in.getOffsetNs();
}
// Only the outputs (trace.hpp's ExchangeOutputs), the token bytes appended straight from the
// message: what outputs_of() takes from a whole exchange read by read_exchange(). A derived
// exchange's tokens are derived without alternatives (ExchangeOutputs has none).
void read_outputs(wire::Exchange::Reader in, ExchangeOutputs& outputs, ListBudget& budget);

// Each choice's outputs as ExchangeOutputs holds them (exchange_outputs.cpp).
void choice_outputs(const std::vector<Choice>& choices, std::vector<ChoiceOutput>& out);

// A /metrics scrape record (format 1.5; wire_metrics.cpp).
void fill_metrics(wire::MetricScrape::Builder out, const MetricScrape& scrape);
void read_metrics(wire::MetricScrape::Reader in, MetricScrape& scrape, ListBudget& budget);
// An exchange's server fields (format 1.6; wire_server.cpp).
void fill_server(wire::Exchange::Builder out, const ServerSaid& said, const ServerState& state);
void read_server(wire::Exchange::Reader in, ServerSaid& said, ServerState& state);

inline std::string errno_text(int error) { return std::strerror(error); }

inline std::uint32_t load_le32(const void* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, 4);
  return value;  // the formats are little-endian, as is every host we build for
}

}  // namespace retrace::detail
