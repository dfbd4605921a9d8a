#include "net/tokenizer_client.hpp"

#include <boost/json.hpp>
#include <stdexcept>

#include "net/connection.hpp"
#include "net/fetch.hpp"

namespace retrace::net {

namespace json = boost::json;

namespace {
constexpr auto kTimeout = std::chrono::seconds(30);
constexpr std::size_t kBodyLimit = 64 << 20;
}  // namespace

TokenCounter remote_token_counter(std::string_view text) {
  Url url = parse_url(text);
  std::string path = url.base_path.empty() ? "/tokenize" : url.base_path;
  url.base_path.clear();
  auto tls = url.tls() ? make_client_tls_context(TlsOptions{}) : nullptr;
  return [url, path, tls](std::string_view prompt) -> std::int64_t {
    std::string where = url.str() + path;
    std::string request = json::serialize(json::object{
        {"prompt", prompt}, {"content", prompt}, {"add_special_tokens", false}});
    Fetched answer = post_json(url, tls, path, std::move(request), kTimeout, kBodyLimit);
    if (answer.status == 0)
      throw std::runtime_error("cannot count tokens with " + where + ": " + answer.error);
    json::error_code error;
    json::value body = json::parse(answer.body, error);
    const json::object* object = error ? nullptr : body.if_object();
    if (answer.status == 200 && object) {
      if (const auto* count = object->if_contains("count"); count && count->is_int64())
        return count->get_int64();
      if (const auto* tokens = object->if_contains("tokens"); tokens && tokens->is_array())
        return static_cast<std::int64_t>(tokens->get_array().size());
    }
    throw std::runtime_error("cannot count tokens with " + where + ": it answered " +
                             std::to_string(answer.status) + " " + answer.body.substr(0, 200) +
                             "; give the target's tokenize endpoint (vLLM, SGLang, llama.cpp and "
                             "retrace serve: http://HOST:PORT/tokenize)");
  };
}

}  // namespace retrace::net
