// Boost.Asio and Beast are built once, here, instead of in every translation unit that uses them
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION): this cuts build time
// severalfold on a 2-core machine.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
