// Plain structs <-> Cap'n Proto: filling a wire::Record's parts from trace.hpp's structs and
// reading them back. Field by field, in trace.capnp's order; see trace.capnp for the schema and
// the versioning rule (unknown enumerants from a newer minor version read as neutral values).
#include "format/wire.hpp"
#include "format/parts.hpp"
#include "format/token_deriver.hpp"
#include "format/wire_syntax.hpp"

namespace retrace::detail {

namespace {

kj::StringPtr text(const std::string& s) { return kj::StringPtr(s.c_str(), s.size()); }
capnp::Data::Reader data(std::string_view s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
capnp::Data::Reader data(const std::string& s) { return data(std::string_view(s)); }
std::string_view bytes_of(capnp::Data::Reader in) {
  return {reinterpret_cast<const char*>(in.begin()), in.size()};
}
void assign(std::string& out, capnp::Text::Reader in) { out.assign(in.begin(), in.size()); }
void assign(std::string& out, capnp::Data::Reader in) {
  out.assign(reinterpret_cast<const char*>(in.begin()), in.size());
}

wire::Source to_wire(Source source) { return static_cast<wire::Source>(source); }
wire::TokenKind to_wire(TokenKind kind) { return static_cast<wire::TokenKind>(kind); }
wire::ErrorKind to_wire(ErrorKind kind) { return static_cast<wire::ErrorKind>(kind); }
wire::Part to_wire(Part part) { return static_cast<wire::Part>(part); }

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
  return value < kErrorKindCount ? static_cast<ErrorKind>(value) : ErrorKind::protocol;
}

Part from_wire(wire::Part part) {
  auto value = static_cast<unsigned>(part);
  return value < enum_count<Part> ? static_cast<Part>(value) : Part::content;
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

void read_labels(capnp::List<wire::Label>::Reader list, std::vector<Label>& labels,
                 ListBudget& budget) {
  labels.resize(budget.take(list.size(), "labels"));
  for (unsigned i = 0; i < list.size(); ++i) {
    auto label = list[i];
    assign(labels[i].key, label.getKey());
    assign(labels[i].value, label.getValue());
  }
}

void read_headers(capnp::List<wire::HttpHeader>::Reader list, std::vector<HttpHeader>& headers,
                  ListBudget& budget) {
  headers.resize(budget.take(list.size(), "headers"));
  for (unsigned i = 0; i < list.size(); ++i) {
    auto header = list[i];
    assign(headers[i].name, header.getName());
    assign(headers[i].value, header.getValue());
  }
}

void read_identity(wire::Exchange::Reader in, std::uint64_t& id, std::optional<std::uint64_t>& source_id,
                   RequestKey& key) {
  id = in.getId();
  if (in.getHasSourceId())
    source_id = in.getSourceId();
  else
    source_id.reset();
  key = RequestKey{in.getKeyHi(), in.getKeyLo()};
}

void read_error(wire::Error::Reader in, Error& error) {
  error.kind = from_wire(in.getKind());
  assign(error.message, in.getMessage());
}

void read_expected(wire::Exchange::Reader in, std::optional<std::string>& expected) {
  if (in.getHasExpected()) {
    if (!expected) expected.emplace();
    assign(*expected, in.getExpected());
  } else {
    expected.reset();
  }
}

}  // namespace

unsigned ListBudget::take(unsigned size, const char* what) {
  if (size > left_)
    throw TraceError("a corrupt record: its " + std::string(what) + " list declares " +
                     std::to_string(size) + " elements, more than the message can hold");
  left_ -= size;
  return size;
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

void read_index(wire::TraceIndex::Reader in, TraceIndex& index) {
  auto frames = in.getFrames();
  auto keys = in.getKeys();
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
}

void read_header(wire::Header::Reader in, TraceHeader& header, ListBudget& budget) {
  header.format_major = in.getFormatMajor();
  header.format_minor = in.getFormatMinor();
  assign(header.tool_version, in.getToolVersion());
  header.created_unix_ns = in.getCreatedUnixNs();
  header.source = from_wire(in.getSource());
  assign(header.target, in.getTarget());
  assign(header.settings, in.getSettings());
  assign(header.host, in.getHost());
  read_labels(in.getLabels(), header.labels, budget);
  assign(header.server_info, in.getServerInfo());
}

void fill_exchange(wire::Exchange::Builder out, const Exchange& exchange, bool tokens_derived) {
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
    choice_out.setPart(to_wire(choice.part));
    choice_out.setToolCall(choice.tool_call);
    if (!choice.tool_name.empty()) choice_out.setToolName(text(choice.tool_name));
    if (!choice.values.empty()) {
      auto values = choice_out.initValues(choice.values.size());
      for (unsigned v = 0; v < choice.values.size(); ++v) values.set(v, choice.values[v]);
    }
    if (tokens_derived) {
      choice_out.setTokenCount(static_cast<std::uint32_t>(choice.tokens.size()));
      continue;  // rebuilt from the events when read
    }
    fill_tokens(choice_out, choice);
  }

  auto usage = out.initUsage();
  usage.setPromptTokens(exchange.usage.prompt_tokens);
  usage.setCompletionTokens(exchange.usage.completion_tokens);
  usage.setTotalTokens(exchange.usage.total_tokens);
  usage.setReasoningTokens(exchange.usage.reasoning_tokens);

  auto error = out.initError();
  error.setKind(to_wire(exchange.error.kind));
  error.setMessage(text(exchange.error.message));

  fill_labels(out.initLabels(exchange.labels.size()), exchange.labels);
  out.setHasExpected(exchange.expected.has_value());
  if (exchange.expected) out.setExpected(text(*exchange.expected));
  out.setDialect(text(exchange.dialect));
  out.setDecodeNote(text(exchange.decode_note));
  out.setRetries(exchange.retries);
  out.setInFlightAtSend(exchange.in_flight_at_send);
  out.setInFlightMax(exchange.in_flight_max);
  fill_server(out, exchange.server, exchange.server_state);
  out.setTokensDerived(tokens_derived);
}

// Which part a choice is (1.3 fields; a 1.2 record reads as content).
static void read_part(wire::Choice::Reader in, Part& part, std::uint32_t& tool_call, std::string& tool_name,
                      std::vector<double>& values, ListBudget& budget) {
  part = from_wire(in.getPart());
  tool_call = in.getToolCall();
  assign(tool_name, in.getToolName());
  auto list = in.getValues();
  values.resize(budget.take(list.size(), "embedding values"));
  for (unsigned v = 0; v < list.size(); ++v) values[v] = list[v];
}

// What an exchange's response made of it: the response, its choices and usage.
// A record's parts as read: at most kMaxParts (format/parts.hpp), the rest left in the file.
static std::size_t parts_read(unsigned declared) { return declared < kMaxParts ? declared : kMaxParts; }

static void read_outputs_side(wire::Exchange::Reader in, Exchange& exchange, ListBudget& budget);

// A 1.7 record's stored token counts, one per choice read (its tokens are derived).
static const std::vector<std::uint32_t>& token_counts(wire::Exchange::Reader in, std::size_t parts) {
  thread_local std::vector<std::uint32_t> counts;
  auto choices = in.getChoices();
  counts.resize(parts);
  for (std::size_t c = 0; c < parts; ++c) counts[c] = choices[static_cast<unsigned>(c)].getTokenCount();
  return counts;
}

void read_exchange(wire::Exchange::Reader in, Exchange& exchange, ListBudget& budget,
                   bool requests_only, DecodeWants derived) {
  read_identity(in, exchange.id, exchange.source_id, exchange.key);
  assign(exchange.session_id, in.getSessionId());
  exchange.start_unix_ns = in.getStartUnixNs();
  exchange.intended_send_ns = in.getIntendedSendNs();
  exchange.actual_send_ns = in.getActualSendNs();
  exchange.first_byte_ns = in.getFirstByteNs();
  exchange.end_ns = in.getEndNs();

  auto request = in.getRequest();
  assign(exchange.request.method, request.getMethod());
  assign(exchange.request.target, request.getTarget());
  read_headers(request.getHeaders(), exchange.request.headers, budget);
  assign(exchange.request.body, request.getBody());
  if (auto unsendable = wire_syntax_error(exchange.request); !unsendable.empty())
    throw UnsendableRequest("exchange " + std::to_string(exchange.id) +
                            " left out: its request cannot go on the wire: " + unsendable);

  if (requests_only) {
    exchange.response = {};
    exchange.choices.clear();
    exchange.usage = {};
  } else {
    read_outputs_side(in, exchange, budget);
  }

  read_error(in.getError(), exchange.error);

  read_labels(in.getLabels(), exchange.labels, budget);
  read_expected(in, exchange.expected);
  assign(exchange.dialect, in.getDialect());
  assign(exchange.decode_note, in.getDecodeNote());
  if (const auto parts = in.getChoices().size(); !requests_only && parts > kMaxParts)
    exchange.decode_note += (exchange.decode_note.empty() ? "" : "; ") + std::to_string(parts) +
                            " parts in the trace, the first " + std::to_string(kMaxParts) + " read";
  exchange.retries = in.getRetries();
  exchange.in_flight_at_send = in.getInFlightAtSend();
  exchange.in_flight_max = in.getInFlightMax();
  read_server(in, exchange.server, exchange.server_state);
  if (!requests_only && in.getTokensDerived())
    derive_tokens(exchange, token_counts(in, exchange.choices.size()), derived);
}

static void read_outputs_side(wire::Exchange::Reader in, Exchange& exchange, ListBudget& budget) {
  auto response = in.getResponse();
  exchange.response.status = response.getStatus();
  read_headers(response.getHeaders(), exchange.response.headers, budget);
  assign(exchange.response.body, response.getBody());
  exchange.response.streamed = response.getStreamed();
  auto events = response.getEvents();
  const auto count = budget.take(events.size(), "events");
  std::size_t bytes = 0;
  for (auto event : events) bytes += event.getData().size();
  exchange.response.events.clear();  // its capacity reused, record after record
  exchange.response.events.reserve(count, bytes);
  for (auto event : events) exchange.response.events.push_back(event.getOffsetNs(), bytes_of(event.getData()));

  auto choices = in.getChoices();
  exchange.choices.resize(parts_read(budget.take(choices.size(), "choices")));
  for (unsigned c = 0; c < exchange.choices.size(); ++c) {
    auto choice_in = choices[c];
    Choice& choice = exchange.choices[c];
    choice.index = choice_in.getIndex();
    choice.kind = from_wire(choice_in.getKind());
    assign(choice.finish_reason, choice_in.getFinishReason());
    read_part(choice_in, choice.part, choice.tool_call, choice.tool_name, choice.values, budget);
    auto tokens = choice_in.getTokens();
    choice.tokens.resize(budget.take(tokens.size(), "tokens"));
    std::size_t used = 0;  // of choice.alternatives, whose elements (and their bytes) are reused
    for (unsigned t = 0; t < tokens.size(); ++t) {
      auto token_in = tokens[t];
      Token& token = choice.tokens[t];
      read_token_figures(token_in, token);
      assign(token.bytes, token_in.getBytes());
      auto top = token_in.getTop();
      // Where its alternatives start even when it has none, as everyone who appends a token
      // spells it (Choice::add_token, the decoder's add_token), so that equal tokens compare equal.
      token.top_begin = static_cast<std::uint32_t>(used);
      token.top_count = static_cast<std::uint32_t>(budget.take(top.size(), "top alternatives"));
      if (choice.alternatives.size() < used + top.size()) choice.alternatives.resize(used + top.size());
      for (unsigned a = 0; a < top.size(); ++a) {
        auto alternative = top[a];
        Alternative& out = choice.alternatives[used++];
        out.id = alternative.getId();
        assign(out.bytes, alternative.getBytes());
        out.logprob = alternative.getLogprob();
      }
    }
    choice.alternatives.resize(used);
  }

  auto usage = in.getUsage();
  exchange.usage.prompt_tokens = usage.getPromptTokens();
  exchange.usage.completion_tokens = usage.getCompletionTokens();
  exchange.usage.total_tokens = usage.getTotalTokens();
  exchange.usage.reasoning_tokens = usage.getReasoningTokens();
}

void read_outputs(wire::Exchange::Reader in, ExchangeOutputs& outputs, ListBudget& budget) {
  read_identity(in, outputs.id, outputs.source_id, outputs.key);
  read_error(in.getError(), outputs.error);
  read_expected(in, outputs.expected);
  assign(outputs.dialect, in.getDialect());
  auto request = in.getRequest();
  assign(outputs.method, request.getMethod());
  assign(outputs.target, request.getTarget());
  outputs.in_flight_at_send = in.getInFlightAtSend();
  outputs.cached_tokens = in.getServer().getCachedTokens();
  outputs.preemptions = in.getServerState().getPreemptions();
  if (in.getTokensDerived()) {  // the events decoded again, read in place (no copy, no Exchange)
    thread_local std::vector<EventView> events;
    thread_local std::vector<Choice> derived;
    auto list = in.getResponse().getEvents();
    events.resize(budget.take(list.size(), "events"));
    for (unsigned i = 0; i < events.size(); ++i) {
      auto data = list[i].getData();
      events[i] = {list[i].getOffsetNs(), {reinterpret_cast<const char*>(data.begin()), data.size()}};
    }
    derive_choices_of(outputs.id, outputs.dialect, events, derived, kNoAlternatives);
    choice_outputs(derived, outputs.choices);
    return;
  }
  auto choices = in.getChoices();
  outputs.choices.resize(parts_read(budget.take(choices.size(), "choices")));
  for (unsigned c = 0; c < outputs.choices.size(); ++c) {
    auto choice_in = choices[c];
    ChoiceOutput& choice = outputs.choices[c];
    choice.index = choice_in.getIndex();
    choice.kind = from_wire(choice_in.getKind());
    read_part(choice_in, choice.part, choice.tool_call, choice.tool_name, choice.values, budget);
    auto tokens = choice_in.getTokens();
    choice.ids.resize(budget.take(tokens.size(), "tokens"));
    choice.bytes.clear();
    for (unsigned t = 0; t < tokens.size(); ++t) {
      auto token_in = tokens[t];
      choice.ids[t] = token_in.getId();
      auto bytes = token_in.getBytes();
      choice.bytes.append(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
    }
  }
}

}  // namespace retrace::detail
