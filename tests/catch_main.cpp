#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "format/token_deriver.hpp"
#include "llm/derive_tokens.hpp"

// Every unit test binary reads traces as the commands do: format 1.7's derived tokens need the
// decoder installed (format/token_deriver.hpp), as cli's main installs it.
// A producer's word that an exchange's tokens are its events' (TokensFromEvents) is checked by
// deriving them anyway, as in a debug build: a wrong word fails the test that writes it.
static const bool kTokenDeriverInstalled =
    (retrace::llm::install_token_deriver(), retrace::check_tokens_from_events(true), true);
