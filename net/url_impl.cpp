// Boost.URL is built once, here, from its headers (its documented header-only mode), rather than
// linked from libboost-url: one package fewer, and the same Boost everywhere (net/url.cpp uses it).
#include <boost/url/src.hpp>
