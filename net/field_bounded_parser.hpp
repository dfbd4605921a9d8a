// An HTTP parser that refuses a header field Beast's fields cannot hold, as an error code.
//
// Beast stores a field's name and value each in at most 65,533 bytes (a 16-bit offset, with
// ": " and CRLF) and throws std::length_error past that — from inside an async read, so the
// exception leaves the completion handler chain and io_context::run(), and a proxy dies of one
// long upstream header. A header limit larger than 64 KiB does not prevent it: the limit bounds
// the whole header, not one field. This parser checks each field before Beast stores it and
// fails the read with http::error::header_limit; oversized() then names the field.
#pragma once

#include <cstddef>
#include <string>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

namespace retrace::net {

// The longest field name or value Beast's fields store.
inline constexpr std::size_t kMaxFieldBytes = 65533;

template <bool isRequest, class Body>
class FieldBoundedParser : public boost::beast::http::parser<isRequest, Body> {
 public:
  // "header field X-Big: its value is 70000 bytes, over the 65533 bytes one field may hold";
  // "" unless a read failed on a field too long.
  const std::string& oversized() const { return oversized_; }

 private:
  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, boost::beast::error_code& ec) override {
    if (name_string.size() > kMaxFieldBytes || value.size() > kMaxFieldBytes) {
      bool long_name = name_string.size() > kMaxFieldBytes;
      oversized_ = "header field " +
                   (long_name ? std::string("name of ") + std::to_string(name_string.size()) + " bytes"
                              : std::string(name_string) + ": its value is " +
                                    std::to_string(value.size()) + " bytes") +
                   ", over the " + std::to_string(kMaxFieldBytes) + " bytes one field may hold";
      ec = boost::beast::http::error::header_limit;
      return;
    }
    // What http::parser::on_field_impl does, which is private to it.
    this->get().insert(name, name_string, value);
  }

  std::string oversized_;
};

template <class Body>
using BoundedRequestParser = FieldBoundedParser<true, Body>;
template <class Body>
using BoundedResponseParser = FieldBoundedParser<false, Body>;

}  // namespace retrace::net
