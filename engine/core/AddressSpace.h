#pragma once
// Jobs under an address-space limit (ulimit -v, RLIMIT_AS; some batch schedulers set one).
// OpenBLAS 0.3.21 retries forever when it cannot allocate its buffers, so a job that would leave
// it no room must be refused before it starts, not found hanging in its eigen-decomposition.

#include <cstdint>
#include <optional>

namespace hyperstream {

// Bytes this process may still map, or nothing when there is no limit.
std::optional<int64_t> addressSpaceLeft();

// Throws Error("RAM_MB") when a job with this RAM budget, OpenBLAS's buffers and the threads'
// stacks would not fit what the process may still map. Returns whether there is a limit at all
// (then input files should not be memory-mapped: a map takes the file's whole size).
bool checkAddressSpace(int64_t ramBytes);

}  // namespace hyperstream
