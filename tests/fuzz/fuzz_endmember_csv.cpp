// Fuzz target: an endmember table (ENDMEMBERS of abundances). Whatever the bytes, reading them
// either throws Error("ENDMEMBERS") or gives a table whose unmixing model can be made.

#include "core/Error.h"
#include "spectra/EndmemberTable.h"
#include "unmixing/AbundanceJob.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hyperstream;
  try {
    const EndmemberTable table =
        parseEndmembersCsv(QByteArray(reinterpret_cast<const char*>(data), static_cast<int>(size)),
                           "fuzz.csv", "ENDMEMBERS");
    const int bands = static_cast<int>(table.bandNames.size());
    for (const AbundanceMethod method :
         {AbundanceMethod::Fcls, AbundanceMethod::Nnls, AbundanceMethod::Ucls}) {
      double condition = 0;
      unmixingModel(table, bands, method, &condition);
    }
  } catch (const Error& error) {
    if (error.parameter() != "ENDMEMBERS") std::abort();
  }
  return 0;
}
