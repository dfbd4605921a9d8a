// Internal to format/: a TraceReader's exchange records handed over as they are, for a reading
// of them other than read_exchange's (format/exchange_rows.hpp). The reader keeps everything
// else: frames, segments, the scrape records, damage and Recovery; a record `read` finds corrupt
// (a kj::Exception or a TraceError) drops the rest of its frame, as read_exchange's would, and an
// UnsendableRequest that one record only.
#pragma once

#include <functional>

#include "format/trace.hpp"
#include "format/wire.hpp"

namespace retrace {

using ExchangeRecordRead = std::function<void(wire::Exchange::Reader, detail::ListBudget&)>;
// The next exchange record given to `read`; false at the end (reader.recovery() says why).
bool next_exchange_record(TraceReader& reader, const ExchangeRecordRead& read);

}  // namespace retrace
