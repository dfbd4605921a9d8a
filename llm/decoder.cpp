// Response decoding: one SSE event or body at a time into per-choice token streams. This file
// holds the public ResponseDecoder, the choices and notes it collects, and the dispatch of each
// parsed event or body to its dialect's reader; decoder_impl.hpp lists where the rest lives.
#include <algorithm>

#include <boost/json/serialize.hpp>

#include "llm/decoder_impl.hpp"
#include "llm/server_said.hpp"

namespace retrace::llm {

void ResponseDecoder::Impl::note(std::string message) {
  if (notes.size() < kMaxNotes) {
    notes.push_back(std::move(message));
  } else {
    ++notes_dropped;
  }
}

// Parses `text` into the arena; nullopt (and a note naming `what`) when it is not JSON.
std::optional<json::value> ResponseDecoder::Impl::parse(std::string_view text, const std::string& what) {
  parser.reset(arena.fresh());
  json::error_code ec;
  parser.write(text.data(), text.size(), ec);
  if (ec) {
    std::string excerpt(text.substr(0, 60));
    for (char& c : excerpt) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    note(what + ": not JSON (" + ec.message() + "): " + excerpt + (text.size() > 60 ? "..." : ""));
    return std::nullopt;
  }
  return parser.release();
}

bool ResponseDecoder::Impl::read_index(const json::object& object, std::string_view what, std::uint32_t& index) {
  const json::value* value = field(object, "index");
  if (!value || value->is_null()) return true;
  const auto parsed = integer_of(*value);
  if (!within_parts(parsed)) {
    note(where() + ": " + std::string(what) + " index out of range: " + json::serialize(*value));
    return false;
  }
  index = static_cast<std::uint32_t>(*parsed);
  return true;
}

Choice* ResponseDecoder::Impl::choice_at(const json::object& object) {
  std::uint32_t index = 0;
  return read_index(object, "choice", index) ? &part_of(index, Part::content) : nullptr;
}

Choice& ResponseDecoder::Impl::part_of(std::uint32_t index, Part part, std::uint32_t call) {
  const PartKey key{index, part, call};
  if (key == last_part) return choices[last_part_position];
  if (const auto found = part_slots.find(key); found != part_slots.end()) {
    last_part = key;
    last_part_position = found->second.position;
    return choices[last_part_position];
  }
  if (choices.size() >= kMaxParts) {
    if (parts_dropped++ == 0) {
      note(where() + ": more than " + std::to_string(kMaxParts) + " outputs (choices, items, blocks, calls or embeddings); the rest dropped");
    }
    dropped_part = Choice{};
    dropped_part.index = index;
    dropped_part.part = part;
    dropped_part.tool_call = call;
    return dropped_part;
  }
  part_slots.emplace(key, PartSlot{static_cast<std::uint32_t>(choices.size())});
  last_part = key;
  last_part_position = static_cast<std::uint32_t>(choices.size());
  Choice& added = choices.emplace_back();
  added.index = index;
  added.part = part;
  added.tool_call = call;
  return added;
}

void ResponseDecoder::Impl::add_text(Part part, std::uint32_t call, std::string_view text, std::int64_t offset_ns) {
  Choice& choice = part_of(0, part, call);
  if (!text.empty()) add_token(choice, offset_ns, BytesFrom::token_text).bytes.assign(text);
}

const ResponseDecoder::Impl::Item* ResponseDecoder::Impl::item_at(std::optional<std::int64_t> position,
                                                                  std::optional<Part> made_as) {
  if (!within_parts(position)) {
    note(where() + ": output position missing or out of range");
    return nullptr;
  }
  const auto at = static_cast<std::size_t>(*position);
  if (items.size() <= at) items.resize(at + 1);
  if (made_as) {
    Item item{*made_as, 0};
    if (*made_as == Part::tool_call) item.call = tool_calls++;
    items[at] = item;
    part_of(0, item.part, item.call);  // a part that is announced exists, even left empty
  }
  if (!items[at]) items[at] = Item{};  // a delta nothing announced: the answer's
  return &*items[at];
}

// A server error inside a 200 stream: {"error": {...}|"..."} or vLLM's {"object":"error"}.
bool ResponseDecoder::Impl::read_error(const json::object& object) {
  const json::value* error = field(object, "error");
  const auto kind = string_field(object, "object");
  if ((!error || error->is_null()) && kind != "error") return false;
  std::string message;
  if (error && error->is_string()) {
    message = std::string(error->get_string());
  } else if (error && error->is_object()) {
    message = std::string(string_field(error->get_object(), "message").value_or(""));
  } else {
    message = std::string(string_field(object, "message").value_or(""));
  }
  note(where() + ": server error: " + message.substr(0, 200));
  if (!server_error) server_error = where() + ": " + message.substr(0, 500);
  return true;
}

// For Dialect::unknown: guess from the first JSON object's keys.
void ResponseDecoder::Impl::sniff(const json::object& root, bool streamed) {
  if (const json::array* choice_array = array_field(root, "choices")) {
    bool chat = false;
    for (const json::value& value : *choice_array) {
      if (const json::object* object = value.if_object()) {
        chat |= object->contains("delta") || object->contains("message");
      }
    }
    dialect = chat ? Dialect::openai_chat : Dialect::openai_completions;
  } else if (root.contains("token") || root.contains("generated_text")) {
    dialect = Dialect::tgi_generate;
  } else if (root.contains("content") && (root.contains("stop") || root.contains("tokens"))) {
    dialect = Dialect::llamacpp_completion;
  } else {
    return;
  }
  sniffed = true;
  note(std::string("dialect guessed from the ") + (streamed ? "stream" : "body") + ": " +
       std::string(to_string(dialect)));
}

void ResponseDecoder::Impl::read(const json::value& value, std::int64_t offset_ns, bool streamed) {
  if (const json::array* array = value.if_array()) {
    // llama.cpp answers several prompts with an array of results; TGI's hub-style / too.
    if (dialect == Dialect::unknown && !array->empty() && array->front().is_object()) {
      sniff(array->front().get_object(), streamed);
    }
    std::uint32_t index = 0;
    for (const json::value& element : *array) {
      if (const json::object* object = element.if_object()) {
        if (dialect == Dialect::tgi_generate) {
          read_tgi_body(*object, index, offset_ns);
        } else {
          read_object(*object, offset_ns, streamed);
        }
      }
      ++index;
    }
    return;
  }
  const json::object* root = value.if_object();
  if (!root) {
    note(where() + ": JSON is not an object");
    return;
  }
  read_object(*root, offset_ns, streamed);
}

void ResponseDecoder::Impl::read_object(const json::object& root, std::int64_t offset_ns, bool streamed) {
  if (dialect == Dialect::unknown) sniff(root, streamed);
  if (read_error(root)) return;
  switch (dialect) {
    case Dialect::openai_completions:
    case Dialect::openai_chat: read_openai(root, offset_ns, streamed); break;
    case Dialect::llamacpp_completion: read_llamacpp(root, offset_ns); break;
    case Dialect::tgi_generate:
      if (streamed) {
        read_tgi_stream(root, offset_ns);
      } else {
        read_tgi_body(root, 0, offset_ns);
      }
      break;
    case Dialect::openai_responses: read_responses(root, offset_ns, streamed); break;
    case Dialect::anthropic_messages: read_messages(root, offset_ns, streamed); break;
    case Dialect::openai_embeddings: read_embeddings(root); break;
    case Dialect::unknown:
      if (notes.empty()) note(where() + ": unknown response shape; kept raw");
      break;
  }
}

ResponseDecoder::ResponseDecoder(Dialect dialect) : impl_(std::make_unique<Impl>(dialect, true, DecodeWants{})) {}
ResponseDecoder::ResponseDecoder(Dialect dialect, bool fast_path)
    : impl_(std::make_unique<Impl>(dialect, fast_path, DecodeWants{})) {}
ResponseDecoder::ResponseDecoder(Dialect dialect, bool fast_path, DecodeWants wants)
    : impl_(std::make_unique<Impl>(dialect, fast_path, wants)) {}
ResponseDecoder::~ResponseDecoder() = default;
void ResponseDecoder::reset(Dialect dialect, DecodeWants wants) { impl_->reset(dialect, wants); }
void ResponseDecoder::set_wants(DecodeWants wants) { impl_->set_wants(wants); }
ResponseDecoder::ResponseDecoder(ResponseDecoder&&) noexcept = default;
ResponseDecoder& ResponseDecoder::operator=(ResponseDecoder&&) noexcept = default;

void ResponseDecoder::on_event(std::string_view data, std::int64_t offset_ns) {
  Impl& impl = *impl_;
  ++impl.events_seen;
  // Keep-alive comments and empty events carry nothing.
  const auto start = data.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return;
  data.remove_prefix(start);
  if (data.substr(0, 6) == "[DONE]") {
    impl.finished = true;
    return;
  }
  if (impl.finished) {
    // llama.cpp's "stop": true and TGI's last event end the stream; anything after is extra.
    if (impl.events_after_end++ == 0) impl.note(impl.where() + ": data after the end of the stream");
  }
  if (impl.read_simple_event(data, offset_ns, true)) return;
  const auto value = impl.parse(data, impl.where());
  if (!value) return;
  impl.read(*value, offset_ns, true);
}

void ResponseDecoder::on_body(std::string_view body, std::int64_t offset_ns) {
  Impl& impl = *impl_;
  impl.events_seen = 1;
  impl.finished = true;
  // Messages about "event 0" read better as "body" here.
  const std::size_t notes_before = impl.notes.size();
  if (!impl.read_simple_event(body, offset_ns, false)) {  // the SAX path, as for a stream's events
    const auto value = impl.parse(body, "body");
    if (!value) return;
    impl.read(*value, offset_ns, false);
  }
  for (std::size_t i = notes_before; i < impl.notes.size(); ++i) {
    if (impl.notes[i].rfind("event 0", 0) == 0) impl.notes[i].replace(0, 7, "body");
  }
  if (impl.server_error && impl.server_error->rfind("event 0", 0) == 0) impl.server_error->replace(0, 7, "body");
}

bool ResponseDecoder::finished() const { return impl_->finished; }

// A 2xx response the server failed in, after the header: an error it wrote into the body or the
// stream, or a stream that stopped short (its HTTP body complete, but no end marker and an answer
// without a finish reason: the engine died behind a proxy that ended the body for it). An error
// the transport already gave (reset, timeout, cut, an HTTP status) is the more precise one and
// stays; replay sets those after finish() and so overrides these as well.
namespace {
void classify_failure(const DecodeState& impl, Exchange& out) {
  if (out.error.kind != ErrorKind::none || out.response.status < 200 || out.response.status >= 300) return;
  if (impl.server_error) {
    out.error = {ErrorKind::server_error, "the server reported an error in a " +
                                              std::to_string(out.response.status) + " response, " +
                                              *impl.server_error};
    return;
  }
  // Only dialects whose streams have an end marker can be told to have stopped short.
  if (!out.response.streamed || impl.finished || impl.dialect == Dialect::unknown) return;
  const bool every_choice_finished =
      !impl.choices.empty() && std::all_of(impl.choices.begin(), impl.choices.end(),
                                           [](const Choice& choice) { return !choice.finish_reason.empty(); });
  if (every_choice_finished) return;  // complete answers; only the end marker is missing (noted)
  out.error = {ErrorKind::truncated,
               impl.events_seen == 0
                   ? std::string("the stream ended before its first event")
                   : "the stream ended after " + std::to_string(impl.events_seen) +
                         " events without its end marker ([DONE]) or a finish reason"};
}
}  // namespace
std::size_t ResponseDecoder::fast_path_events() const { return impl_->fast_events; }

const std::vector<ToolCallId>& ResponseDecoder::tool_call_ids() const { return impl_->tool_call_ids; }

void ResponseDecoder::finish(Exchange& out) {
  Impl& impl = *impl_;
  std::sort(impl.choices.begin(), impl.choices.end(), choice_order);
  // Every part of a choice carries the choice's finish reason (servers send it beside the
  // content, or at the end of the message).
  for (std::size_t i = 0; i < impl.choices.size();) {
    std::size_t end = i;
    std::string reason;
    for (; end < impl.choices.size() && impl.choices[end].index == impl.choices[i].index; ++end) {
      if (reason.empty()) reason = impl.choices[end].finish_reason;
    }
    for (; i < end; ++i) impl.choices[i].finish_reason = reason;
  }
  for (Choice& choice : impl.choices) {
    std::size_t with_id = 0;
    std::size_t with_logprob = 0;
    // Without alternatives (DecodeWants): what the general path built of them is dropped here (the
    // fast path built none), every token spelled as one that has none.
    // Without logprob values, each is 0 whichever path read it (the fast path converts none).
    const bool lean = !impl.wants.alternatives;
    const bool values = impl.wants.logprob_values;
    for (Token& token : choice.tokens) {
      with_id += token.id >= 0;
      with_logprob += token.has_logprob;
      if (lean) token.top_begin = token.top_count = 0;
      if (!values) token.logprob = 0;
    }
    if (lean) choice.alternatives.clear();
    const std::size_t count = choice.tokens.size();
    // Completions with "echo" and "logprobs" (lm-eval's loglikelihood requests): the prompt's first
    // token has no logprob (null), nothing coming before it; the tokens are still the server's.
    const bool echoed = count > 1 && with_logprob == count - 1 && !choice.tokens.front().has_logprob;
    if (count == 0) {
      choice.kind = TokenKind::none;
    } else if (with_id == count) {
      choice.kind = TokenKind::token_ids;
    } else if (with_logprob == count || echoed) {
      choice.kind = TokenKind::logprob_tokens;
    } else {
      choice.kind = TokenKind::text_deltas;
      if (with_id > 0 || with_logprob > 0) {
        impl.note("choice " + std::to_string(choice.index) + " " + std::string(to_string(choice.part)) + ": only " +
                  std::to_string(std::max(with_id, with_logprob)) + " of " + std::to_string(count) +
                  " tokens carry ids or logprobs; compared as text");
      }
    }
  }
  if (!impl.finished && impl.events_seen > 0) {
    impl.note("stream ended before its end marker after " + std::to_string(impl.events_seen) + " events");
  }
  classify_failure(impl, out);
  out.choices = std::move(impl.choices);
  impl.choices.clear();
  out.usage = impl.usage;
  out.server = server_said(out.response);
  out.dialect = std::string(to_string(impl.dialect));
  std::string note;
  for (const std::string& part : impl.notes) {
    if (!note.empty()) note += "; ";
    note += part;
  }
  if (impl.notes_dropped > 0) note += "; and " + std::to_string(impl.notes_dropped) + " more";
  out.decode_note = std::move(note);
}

std::string choice_text(const Choice& choice) {
  std::size_t size = 0;
  for (const Token& token : choice.tokens) size += token.bytes.size();
  std::string text;
  text.reserve(size);
  for (const Token& token : choice.tokens) text += token.bytes;
  return text;
}

}  // namespace retrace::llm
