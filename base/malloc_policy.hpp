// How long-running processes allocate (glibc's malloc): what they free goes back to the system or
// is used again rather than staying resident. Two settings, each once a process, before the
// threads they concern start; replay sets both (replay/malloc_policy.hpp), record only the first
// (bench/RESULTS.md, "record under replay's malloc policy").
#pragma once

namespace retrace {

// A fixed mmap threshold of 1 MiB: glibc's own moves up to the largest block freed so far and its
// trim threshold to twice that, so once a long exchange (a 16,000-token stream's events are one
// ~8 MB block) was freed, the next ones came from the heap and up to twice the largest stayed
// resident, freed. Above 1 MiB a block is mapped and given back when freed; a request of a usual
// size (256 tokens with logprobs is ~100 KB) stays on the heap.
void use_fixed_mmap_threshold();

// One malloc arena for every thread: glibc gives each new thread an arena of its own, whose freed
// memory stays there. For a process that starts new threads again and again (replay's --repeat
// passes and sweep levels); one whose threads live as long as it does (record) keeps more
// resident with it, not less.
void use_one_malloc_arena();

}  // namespace retrace
