#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "llm/derive_tokens.hpp"

// Every unit test binary reads traces as the commands do: format 1.7's derived tokens need the
// decoder installed (format/token_deriver.hpp), as cli's main installs it.
static const bool kTokenDeriverInstalled = (retrace::llm::install_token_deriver(), true);
