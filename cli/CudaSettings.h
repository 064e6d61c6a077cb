#pragma once
// Settings of the CUDA driver for the command line's own processes (the QGIS plugin leaves its
// host's environment alone).

#include <cstdlib>

namespace hyperstream {

// A CUDA context opens one hardware work queue per connection, 8 by default; the backend uses two
// streams, so two suffice. On an H100 a context then starts in 0.075 s instead of 0.10-0.16 s.
// Called before any thread starts; a value the user set is kept.
inline void useTwoCudaConnections() {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2", 0);
}

}  // namespace hyperstream
