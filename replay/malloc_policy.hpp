// How a replay's threads allocate (glibc's malloc): one arena for every thread of the run, and a
// fixed mmap threshold, so that what a run frees goes back to the system or is used again rather
// than staying resident (bench/RESULTS.md, "replay's memory across --repeat" and "One long
// exchange decoded at a time").
#pragma once

namespace retrace::replay {

// Sets the policy, once a process; before the run's first thread asks for an arena.
void use_run_malloc_policy();

}  // namespace retrace::replay
