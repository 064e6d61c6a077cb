// Fuzz target: a statistics JSON (STATS of apply and inverse). Whatever the bytes, reading them
// and building what apply and inverse build from them either throws Error("STATS") or gives
// projections that take a pixel.

#include "core/Error.h"
#include "pca/SavedTransform.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

// What apply and inverse build from a transform, and one pixel through it.
void applyAndInvert(const hyperstream::SavedTransform& saved) {
  using namespace hyperstream;
  const PcaModel& model = saved.model;
  const int all = model.componentCount();
  if (saved.components < 1 || saved.components > all) std::abort();
  const Projection forward = model.projection(saved.components);
  std::vector<double> pixel(static_cast<size_t>(model.bands), 1.0), components(saved.components);
  for (int k = 0; k < saved.components; ++k)
    for (int b = 0; b < model.bands; ++b)
      components[k] += (pixel[b] - forward.center[b]) *
                       forward.weights[static_cast<size_t>(b) * saved.components + k];
  for (int k = 0; k < saved.components; ++k) model.componentBound(k);
  const Projection rebuild = model.rebuilding(all);
  volatile double sink = rebuild.restore.empty() ? 0.0 : rebuild.restore.back();
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hyperstream;
  try {
    applyAndInvert(parseSavedTransform(
        QByteArray(reinterpret_cast<const char*>(data), static_cast<int>(size)), "fuzz.json"));
  } catch (const Error& error) {
    if (error.parameter() != "STATS") std::abort();
  }
  return 0;
}
